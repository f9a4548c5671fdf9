package main

import (
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/internal/optional"
)

// optionalFlag binds a flag to an optional setting: the setting is set
// only when the flag is given, so that its owner's default applies
// otherwise (the help shows that default), and a value given, zero
// included, is judged by the owner's rules as it is.
type optionalFlag[T any] struct {
	v     *optional.Value[T]
	def   T
	parse func(string) (T, error)
	show  func(T) string
	kind  string // the type pflag's help names
}

func (f *optionalFlag[T]) String() string { return f.show(f.v.Or(f.def)) }

func (f *optionalFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.v = optional.Of(v)
	return nil
}

func (f *optionalFlag[T]) Type() string { return f.kind }

func optionalInt(fs *pflag.FlagSet, v *optional.Value[int], name string, def int, usage string) {
	fs.Var(&optionalFlag[int]{v: v, def: def, kind: "int", show: strconv.Itoa, parse: func(s string) (int, error) {
		n, err := strconv.ParseInt(s, 0, strconv.IntSize)
		return int(n), err
	}}, name, usage)
}

func optionalFloat(fs *pflag.FlagSet, v *optional.Value[float64], name string, def float64, usage string) {
	fs.Var(&optionalFlag[float64]{v: v, def: def, kind: "float64",
		show:  func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
		parse: func(s string) (float64, error) { return strconv.ParseFloat(s, 64) },
	}, name, usage)
}

func optionalDuration(fs *pflag.FlagSet, v *optional.Value[time.Duration], name string, def time.Duration, usage string) {
	fs.Var(&optionalFlag[time.Duration]{v: v, def: def, kind: "duration", show: time.Duration.String, parse: time.ParseDuration}, name, usage)
}
