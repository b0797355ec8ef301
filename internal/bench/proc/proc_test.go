package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "strata --data-dir {data}", want: []string{"strata", "--data-dir", "{data}"}},
		{in: "  a\tb  \n c ", want: []string{"a", "b", "c"}},
		{in: `prometheus '--config.file=/tmp/my conf.yml' "--storage.tsdb.path={data}"`, want: []string{"prometheus", "--config.file=/tmp/my conf.yml", "--storage.tsdb.path={data}"}},
		{in: `a "x \"y\" \\ \n" b`, want: []string{"a", `x "y" \ \n`, "b"}},
		{in: `a\ b c`, want: []string{"a b", "c"}},
		{in: `''`, want: []string{""}},
		{in: `a'b'"c"d`, want: []string{"abcd"}},
		{in: "", err: true},
		{in: "   ", err: true},
		{in: "a 'b", err: true},
		{in: `a "b`, err: true},
		{in: `a \`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitCommand(tt.in)
			if tt.err {
				if err == nil {
					t.Fatalf("SplitCommand(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"addr": "127.0.0.1:9", "port": "9", "data": "/tmp/a b"}
	got, err := Expand([]string{"x", "--listen={addr}", "-p{port}{port}", "{data}/wal", `{"json":1}`, "{Upper}"}, vars)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x", "--listen=127.0.0.1:9", "-p99", "/tmp/a b/wal", `{"json":1}`, "{Upper}"}
	if !slices.Equal(got, want) {
		t.Fatalf("Expand = %q, want %q", got, want)
	}
	if _, err := Expand([]string{"--x={dat}"}, vars); err == nil || !strings.Contains(err.Error(), "{dat}") {
		t.Fatalf("unknown placeholder: err = %v", err)
	}
}

func TestParseStat(t *testing.T) {
	b, err := os.ReadFile("testdata/stat.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	want := CPU{User: 12340 * time.Millisecond, System: 5670 * time.Millisecond}
	if got != want || got.Total() != 18010*time.Millisecond {
		t.Fatalf("ParseStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "1 (x S 1 2", "1 (x) S 1 2 3", "1 (x) S 1 2 3 4 5 6 7 8 9 u s 12 13"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	b, err := os.ReadFile("testdata/status.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStatus(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Memory{RSS: 81920 << 10, Peak: 104857 << 10}); got != want {
		t.Fatalf("ParseStatus = %+v, want %+v", got, want)
	}
	b, err = os.ReadFile("testdata/status_kthread.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseStatus(b); err == nil {
		t.Fatal("a status without Vm lines parsed")
	}
	if _, err := ParseStatus([]byte("VmRSS:\t12 MB\nVmHWM:\t1 kB\n")); err == nil {
		t.Fatal("a unit other than kB parsed")
	}
}

func TestReadSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := ReadCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS {
		t.Fatalf("implausible memory %+v", m)
	}
}

func TestStartStopKill(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	start := func(command string) *Server {
		t.Helper()
		s, err := Start(StartOptions{Command: command, DataDir: dir, LogPath: filepath.Join(dir, "log")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Kill() })
		return s
	}

	s := start("sh -c 'exec sleep 60' {port}")
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") || !strings.HasSuffix(s.Addr, ":"+s.Args[3]) {
		t.Fatalf("addr %q args %q", s.Addr, s.Args)
	}
	sm := StartSampler(s.Pid())
	if p, err := sm.Peak(); err != nil || p <= 0 {
		t.Fatalf("Peak = %d, %v", p, err)
	}
	if err := s.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	sm.Stop()
	if p, err := sm.Peak(); err != nil || p <= 0 {
		t.Fatalf("Peak after exit = %d, %v", p, err)
	}

	s = start("sleep 60")
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	default:
		t.Fatal("Kill returned before the process exited")
	}

	s = start("sh -c 'echo boom; exit 3'")
	<-s.Exited()
	if err := s.Died(); !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Died() = %v, want the log in it", err)
	}
}

func TestMeanRSS(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := &Sampler{rss: []rssReading{
		{at: t0, rss: 100},
		{at: t0.Add(time.Second), rss: 200},
		{at: t0.Add(2 * time.Second), rss: 400},
		{at: t0.Add(3 * time.Second), rss: 800},
	}}
	if m, ok := s.MeanRSS(t0.Add(time.Second), t0.Add(2*time.Second)); !ok || m != 300 {
		t.Errorf("MeanRSS over readings 2-3 = %d, %v; want 300", m, ok)
	}
	if m, ok := s.MeanRSS(t0, t0.Add(time.Hour)); !ok || m != 375 {
		t.Errorf("MeanRSS over all = %d, %v; want 375", m, ok)
	}
	if _, ok := s.MeanRSS(t0.Add(time.Hour), t0.Add(2*time.Hour)); ok {
		t.Error("MeanRSS with no reading in range reported ok")
	}
}

// TestProcessTree launches a server by a script that leaves a child
// beside it, as vmalert beside VictoriaMetrics: the tree holds both,
// their CPU and memory are summed, and Stop and Kill leave neither.
func TestProcessTree(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	for _, end := range []string{"stop", "kill"} {
		s, err := Start(StartOptions{Command: "sh -c 'sleep 60 & exec sleep 61'", DataDir: dir, LogPath: filepath.Join(dir, "log")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Kill() })
		var tree []int
		for deadline := time.Now().Add(10 * time.Second); len(tree) < 2 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			tree = Tree(s.Pid())
		}
		if len(tree) != 2 || tree[0] != s.Pid() {
			t.Fatalf("Tree(%d) = %v, want the server and its child", s.Pid(), tree)
		}
		one, err := ReadMemory(tree[1])
		if err != nil {
			t.Fatal(err)
		}
		all, err := ReadTreeMemory(s.Pid())
		if err != nil {
			t.Fatal(err)
		}
		if all.RSS <= one.RSS {
			t.Fatalf("tree RSS %d, not more than the child's %d", all.RSS, one.RSS)
		}
		if _, err := ReadTreeCPU(s.Pid()); err != nil {
			t.Fatal(err)
		}
		if end == "stop" {
			err = s.Stop(10 * time.Second)
		} else {
			err = s.Kill()
		}
		if err != nil {
			t.Fatalf("%s: %v", end, err)
		}
		if s.groupAlive() {
			t.Fatalf("after %s, a process of the group still runs", end)
		}
	}
}
