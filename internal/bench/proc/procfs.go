package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ClockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat.
// Linux fixes it at 100 on every architecture Go supports for the ABI
// (sysconf(_SC_CLK_TCK) would need cgo to ask).
const ClockTicks = 100

// CPU is the CPU time a process has used.
type CPU struct {
	User, System time.Duration
}

// Total returns user plus system time.
func (c CPU) Total() time.Duration { return c.User + c.System }

// ParseStat extracts the user and system CPU time from the contents of
// /proc/<pid>/stat. The command name, field 2, is in parentheses and may
// itself hold blanks and parentheses, so fields are counted from the last
// ')'.
func ParseStat(b []byte) (CPU, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return CPU{}, errors.New("parse /proc stat: no ')' after the command name")
	}
	// After ")" come fields 3 (state) onwards; utime and stime are fields
	// 14 and 15, so the 12th and 13th of these.
	f := bytes.Fields(b[end+1:])
	if len(f) < 13 {
		return CPU{}, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return CPU{}, fmt.Errorf("parse /proc stat: %w", err)
	}
	tick := time.Second / ClockTicks
	return CPU{User: time.Duration(utime) * tick, System: time.Duration(stime) * tick}, nil
}

// Memory is a process' resident memory, in bytes.
type Memory struct {
	// RSS is the resident set size now (VmRSS), and Peak its high-water
	// mark since the process started or since ResetPeak (VmHWM).
	RSS, Peak int64
}

// ParseStatus extracts VmRSS and VmHWM from the contents of
// /proc/<pid>/status. Both are given in kB (KiB, in fact).
func ParseStatus(b []byte) (Memory, error) {
	var m Memory
	var seen int
	for line := range bytes.Lines(b) {
		var dst *int64
		switch {
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			dst = &m.RSS
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			dst = &m.Peak
		default:
			continue
		}
		f := bytes.Fields(line[bytes.IndexByte(line, ':')+1:])
		if len(f) != 2 || string(f[1]) != "kB" {
			return m, fmt.Errorf("parse /proc status: unexpected line %q", bytes.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return m, fmt.Errorf("parse /proc status: %w", err)
		}
		*dst = kb << 10
		seen++
	}
	if seen != 2 {
		// Kernel threads and zombies have no Vm lines.
		return m, errors.New("parse /proc status: no VmRSS and VmHWM lines (has the process exited?)")
	}
	return m, nil
}

// ReadCPU returns the CPU time process pid has used.
func ReadCPU(pid int) (CPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return CPU{}, err
	}
	return ParseStat(b)
}

// ReadMemory returns the resident memory of process pid.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return ParseStatus(b)
}

// ResetPeak sets process pid's VmHWM back to its current RSS (Linux 4.0
// and later), so that a later Peak covers only what happens after. It
// needs the right to write /proc/<pid>/clear_refs, which the user who
// started the process has.
func ResetPeak(pid int) error {
	// "5" resets the peak RSS; see proc(5), /proc/pid/clear_refs.
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// Tree returns pid and its living descendants, parents before children.
// A server launched by a script (vmalert beside VictoriaMetrics, say) is
// the whole tree. Children are read from each thread's
// /proc/<pid>/task/<tid>/children, since a Go program forks from any of
// its threads; a process that exits meanwhile is left out.
func Tree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", out[i]))
		if err != nil {
			continue
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", out[i], task.Name()))
			if err != nil {
				continue
			}
			for f := range bytes.FieldsSeq(b) {
				if c, err := strconv.Atoi(string(f)); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// ReadTreeCPU returns the CPU time process pid and its living descendants
// have used. It fails only if pid itself cannot be read.
func ReadTreeCPU(pid int) (CPU, error) {
	total, err := ReadCPU(pid)
	if err != nil {
		return CPU{}, err
	}
	for _, p := range Tree(pid)[1:] {
		if c, err := ReadCPU(p); err == nil {
			total.User += c.User
			total.System += c.System
		}
	}
	return total, nil
}

// ReadTreeMemory returns the resident memory of process pid and its living
// descendants, summed: the peak is the sum of their peaks, an upper bound
// of the peak they reached together. It fails only if pid itself cannot
// be read.
func ReadTreeMemory(pid int) (Memory, error) {
	total, err := ReadMemory(pid)
	if err != nil {
		return Memory{}, err
	}
	for _, p := range Tree(pid)[1:] {
		if m, err := ReadMemory(p); err == nil {
			total.RSS += m.RSS
			total.Peak += m.Peak
		}
	}
	return total, nil
}
