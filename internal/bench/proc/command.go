package proc

import (
	"errors"
	"fmt"
	"strings"
)

// SplitCommand splits a command line into arguments the way a POSIX shell
// splits words: on unquoted blanks, with '...' taken literally, "..."
// taken literally except for \" \\ \$ and \`, and a backslash outside
// quotes escaping the next character. It does not expand variables, globs
// or anything else: the command is run directly, not by a shell, so the
// harness measures and signals the server itself rather than a shell.
func SplitCommand(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			inArg = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' in command")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inArg = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New(`unterminated " in command`)
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("command ends with a backslash")
			}
			inArg = true
			i++
			cur.WriteByte(s[i])
		default:
			inArg = true
			cur.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	if len(args) == 0 {
		return nil, errors.New("empty command")
	}
	return args, nil
}

// Expand replaces each {name} in args with vars[name] and returns the new
// arguments. Replacing within each argument after splitting keeps a value
// with blanks (a data directory path) one argument. A {name} that vars
// lacks is an error, so a typo does not reach the server.
func Expand(args []string, vars map[string]string) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		var b strings.Builder
		for {
			open := strings.IndexByte(a, '{')
			if open < 0 {
				break
			}
			end := strings.IndexByte(a[open:], '}')
			if end < 0 {
				break
			}
			name := a[open+1 : open+end]
			b.WriteString(a[:open])
			switch v, ok := vars[name]; {
			case ok:
				b.WriteString(v)
			case isPlaceholder(name):
				return nil, fmt.Errorf("unknown placeholder {%s} in argument %q (known: %s)", name, args[i], knownNames(vars))
			default:
				// Not ours (a JSON argument, say): keep it as it is.
				b.WriteString(a[open : open+end+1])
			}
			a = a[open+end+1:]
		}
		b.WriteString(a)
		out[i] = b.String()
	}
	return out, nil
}

// isPlaceholder reports whether name looks like a placeholder: a short
// lower-case word. Anything else between braces is left alone.
func isPlaceholder(name string) bool {
	if name == "" || len(name) > 16 {
		return false
	}
	for _, c := range name {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func knownNames(vars map[string]string) string {
	var names []string
	for _, n := range []string{"addr", "host", "port", "data"} {
		if _, ok := vars[n]; ok {
			names = append(names, "{"+n+"}")
		}
	}
	return strings.Join(names, " ")
}
