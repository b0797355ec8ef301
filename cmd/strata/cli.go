package main

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	promversion "github.com/prometheus/common/version"
)

// version is set at build time with -ldflags "-X main.version=...". The
// revision comes from the build's VCS stamp (go build in a checkout);
// branch, build user and date from -X of the variables of
// github.com/prometheus/common/version, as Prometheus' build sets them.
var version = "0.1.0-dev"

// errPrinted is returned by parse when the command line asked for help
// or the version, which is printed: the command ends with status 0.
var errPrinted = errors.New("help or version printed")

// exitPanic is what a kingpin application's terminate panics with, for
// parse to recover: kingpin ends the process after it prints help or the
// version, which would end a test too.
type exitPanic int

// versionText is what --version prints, in Prometheus' layout.
func versionText() string {
	promversion.Version = version
	for _, v := range []*string{&promversion.Branch, &promversion.BuildUser, &promversion.BuildDate} {
		if *v == "" {
			*v = "unknown"
		}
	}
	return promversion.Print("strata")
}

// newApp returns a kingpin application for command name ("strata",
// "strata tsdb", ...) with the conventions of Prometheus' binaries:
// --flag=value or --flag value, --[no-]flag for booleans, -h and --help,
// and --version. Help goes to out, errors are the caller's to print.
func newApp(name, help string, out io.Writer) *kingpin.Application {
	app := kingpin.New(name, help)
	app.Version(versionText())
	app.HelpFlag.Short('h')
	app.UsageWriter(out)
	app.ErrorWriter(out)
	app.Terminate(func(code int) { panic(exitPanic(code)) })
	return app
}

// parse parses args with app and returns the command chosen, if app has
// commands; errPrinted if help or the version was asked for and printed.
func parse(app *kingpin.Application, args []string) (cmd string, err error) {
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			cmd, err = "", errPrinted
			if code != 0 {
				err = errors.New("invalid command line")
			}
		}
	}()
	return app.Parse(compatArgs(app, args))
}

// compatArgs rewrites the forms of strata's flags that Go's flag package
// took and kingpin does not, so that command lines written for them keep
// working: a flag of app with one dash (-data-dir), a boolean given a
// value (--self-scrape=false, kingpin's --no-self-scrape), and a flag
// given twice, where the last one wins.
func compatArgs(app *kingpin.Application, args []string) []string {
	flags := map[string]*kingpin.FlagModel{}
	model := app.Model()
	for _, f := range model.Flags {
		flags[f.Name] = f
	}
	var walk func([]*kingpin.CmdModel)
	walk = func(cmds []*kingpin.CmdModel) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				flags[f.Name] = f
			}
			walk(c.Commands)
		}
	}
	walk(model.Commands)
	type given struct {
		name string   // of the flag, "" for an argument
		args []string // the flag and its value
	}
	var all []given
	last := map[string]int{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			all = append(all, given{args: args[i:]})
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			if name, _, _ := strings.Cut(a[1:], "="); flags[name] != nil {
				a = "-" + a
			}
		}
		if !strings.HasPrefix(a, "--") {
			all = append(all, given{args: []string{a}})
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		f := flags[name]
		if f == nil && strings.HasPrefix(name, "no-") && isBool(flags[name[3:]]) {
			name = name[3:]
			f = flags[name]
		}
		if f == nil {
			all = append(all, given{args: []string{a}})
			continue
		}
		g := given{name: name, args: []string{a}}
		switch {
		case isBool(f):
			if b, err := strconv.ParseBool(value); hasValue && err == nil && a == "--"+name+"="+value {
				g.args[0] = "--" + name
				if !b {
					g.args[0] = "--no-" + name
				}
			}
		case !hasValue && i+1 < len(args):
			i++
			g.args = append(g.args, args[i])
		}
		if c, ok := f.Value.(interface{ IsCumulative() bool }); !ok || !c.IsCumulative() {
			last[name] = len(all)
		}
		all = append(all, g)
	}
	out := make([]string, 0, len(args))
	for i, g := range all {
		if j, ok := last[g.name]; ok && g.name != "" && j != i {
			continue
		}
		out = append(out, g.args...)
	}
	return out
}

func isBool(f *kingpin.FlagModel) bool {
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagValues returns the flags of app and their values, for
// /api/v1/status/flags, without those of help and --version.
func flagValues(app *kingpin.Application) map[string]string {
	values := map[string]string{}
	for _, f := range app.Model().Flags {
		if !f.Hidden && f.Name != "help" && f.Name != "version" {
			values[f.Name] = f.Value.String()
		}
	}
	return values
}

// flagger is an application or a command, which flags are added to.
type flagger interface {
	Flag(name, help string) *kingpin.FlagClause
}

// flags adds flags bound to variables whose values before parsing are
// the defaults, shown as such in the help.
type flags struct{ f flagger }

func (s flags) String(p *string, name, help string) {
	s.f.Flag(name, help).Default(*p).StringVar(p)
}

func (s flags) Bool(p *bool, name, help string) {
	s.f.Flag(name, help).Default(strconv.FormatBool(*p)).BoolVar(p)
}

func (s flags) Int(p *int, name, help string) {
	s.f.Flag(name, help).Default(strconv.Itoa(*p)).IntVar(p)
}

func (s flags) Int64(p *int64, name, help string) {
	s.f.Flag(name, help).Default(strconv.FormatInt(*p, 10)).Int64Var(p)
}

func (s flags) Float64(p *float64, name, help string) {
	s.f.Flag(name, help).Default(strconv.FormatFloat(*p, 'g', -1, 64)).Float64Var(p)
}

func (s flags) Duration(p *time.Duration, name, help string) {
	s.f.Flag(name, help).Default(p.String()).DurationVar(p)
}

// Strings adds a flag that may be given many times, without a default.
func (s flags) Strings(p *[]string, name, help string) {
	s.f.Flag(name, help).StringsVar(p)
}
