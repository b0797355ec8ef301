package server

import (
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestParseResident(t *testing.T) {
	status := "Name:\tstrata\nVmRSS:\t  300 kB\nRssAnon:\t  200 kB\nRssFile:\t   96 kB\nRssShmem:\t    4 kB\n"
	anon, file, ok := parseResident([]byte(status))
	if !ok || anon != 200*1024 || file != 96*1024 {
		t.Fatalf("anon %g, file %g, ok %v", anon, file, ok)
	}
	for _, bad := range []string{
		"RssAnon:\t200 kB\n",                   // no RssFile
		"RssAnon:\t200 MB\nRssFile:\t96 kB\n",  // another unit
		"RssAnon:\tmany kB\nRssFile:\t96 kB\n", // not a number
		"RssAnon:\t200\nRssFile:\t96 kB\n",     // no unit
	} {
		if _, _, ok := parseResident([]byte(bad)); ok {
			t.Errorf("%q: parsed", bad)
		}
	}
}

// On Linux the collector reports both parts of the process' own RSS;
// elsewhere, and for a status file it cannot read, nothing.
func TestResidentCollector(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newResidentCollector("/proc/self/status"))
	if n, err := testutil.GatherAndCount(reg, "strata_process_resident_anonymous_bytes", "strata_process_resident_file_bytes"); err != nil || n != 2 {
		t.Fatalf("%d metrics, %v", n, err)
	}
	got, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range got {
		if v := mf.GetMetric()[0].GetGauge().GetValue(); v <= 0 {
			t.Errorf("%s = %g", mf.GetName(), v)
		}
	}
	none := prometheus.NewRegistry()
	none.MustRegister(newResidentCollector("/nonexistent/status"))
	if n, err := testutil.GatherAndCount(none); err != nil || n != 0 {
		t.Fatalf("an unreadable status file: %d metrics, %v", n, err)
	}
}
