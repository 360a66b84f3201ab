package config

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// value is the typed half of a row of the settings table: how the text of a
// flag or variable becomes its Config field, what the field holds when
// nothing sets it, and the field's own rules. The constructors below (text,
// choice, number, duration, boolean, list) build one from a pointer to the
// field, so a row cannot parse into one field and default another.
type value struct {
	// typ names the type in --help and the README: string, int, duration,
	// bool, list, or the choices (on|off).
	typ string
	// def is the default as it is written in --help and the README; empty
	// when the setting has none.
	def string
	// set parses the text of a flag or variable into the field.
	set func(c *Config, s string) error
	// fill stores the default in the field when the field is zero (zero
	// means default, as everywhere in agentchat). Nil for a default that
	// is derived from other settings (derive) or applied by the package
	// that uses the setting.
	fill func(c *Config)
	// check enforces the field's own rules once defaults are in; nil for
	// none. Rules between settings are Validate's.
	check func(c *Config) error
}

// shows replaces the default's text and leaves its application to others:
// for a default derived from other settings (derive), or applied by the
// package that consumes the setting (its Default… constant), or for a zero
// value that means "off".
func (v value) shows(text string) value {
	v.def, v.fill = text, nil
	return v
}

// scalar builds the value of a single field of a comparable type.
func scalar[T comparable](typ string, p func(*Config) *T, def T, show func(T) string, parse func(string) (T, error), checks []func(T) error) value {
	var zero T
	v := value{
		typ: typ,
		set: func(c *Config, s string) error {
			x, err := parse(s)
			if err != nil {
				return err
			}
			*p(c) = x
			return nil
		},
		check: func(c *Config) error {
			for _, ck := range checks {
				if err := ck(*p(c)); err != nil {
					return err
				}
			}
			return nil
		},
	}
	if def != zero {
		v.def = show(def)
		v.fill = func(c *Config) {
			if *p(c) == zero {
				*p(c) = def
			}
		}
	}
	return v
}

// text is a string setting.
func text(p func(*Config) *string, def string, checks ...func(string) error) value {
	return scalar("string", p, def, func(s string) string { return s }, func(s string) (string, error) { return s, nil }, checks)
}

// choice is a string setting that must be one of allowed (compared exactly).
func choice(p func(*Config) *string, def string, allowed ...string) value {
	in := func(s string) error {
		for _, a := range allowed {
			if s == a {
				return nil
			}
		}
		return fmt.Errorf("must be %s, not %q", orList(allowed), s)
	}
	// An unset choice with no default is left empty (derived later, or
	// meaning "none"), so only a value someone gave is checked.
	return scalar(strings.Join(allowed, "|"), p, def, func(s string) string { return s }, func(s string) (string, error) { return s, nil },
		[]func(string) error{func(s string) error {
			if s == "" {
				return nil
			}
			return in(s)
		}})
}

// number is an integer setting.
func number[T int | int64](p func(*Config) *T, def T, checks ...func(T) error) value {
	return scalar("int", p, def, func(n T) string { return strconv.FormatInt(int64(n), 10) }, func(s string) (T, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not an integer: %q", s)
		}
		return T(n), nil
	}, checks)
}

// decimal is a non-integer number setting (an amount of money).
func decimal(p func(*Config) *float64, def float64, checks ...func(float64) error) value {
	return scalar("number", p, def, func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }, func(s string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("not a number: %q", s)
		}
		return f, nil
	}, checks)
}

// duration is a time.Duration setting, written like 15s, 2m or 720h.
func duration(p func(*Config) *time.Duration, def time.Duration, checks ...func(time.Duration) error) value {
	return scalar("duration", p, def, formatDuration, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("not a duration (like 15s or 2m): %q", s)
		}
		return d, nil
	}, checks)
}

// boolean is a true/false setting.
func boolean(p func(*Config) *bool, def bool) value {
	return scalar("bool", p, def, strconv.FormatBool, func(s string) (bool, error) {
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return false, fmt.Errorf("not a boolean (true or false): %q", s)
		}
		return b, nil
	}, nil)
}

// list is a comma-separated setting, read by parseList. A list has no
// default: empty is the default.
func list[E any](p func(*Config) *[]E, entry func(s string, n int) (E, error), whole func([]E) error) value {
	return value{
		typ: "list",
		set: func(c *Config, s string) error {
			out, err := parseList(s, entry, whole)
			if err != nil {
				return err
			}
			*p(c) = out
			return nil
		},
	}
}

// parseList reads a comma-separated list. Blank entries are skipped; every
// other entry is trimmed and parsed by entry (with its position from 1),
// whose error names the entry: by its text, or by its position for a
// secret list. whole, when set, checks the entries together (duplicates,
// exclusive entries).
func parseList[E any](s string, entry func(s string, n int) (E, error), whole func([]E) error) ([]E, error) {
	var out []E
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		e, err := entry(item, len(out)+1)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if whole != nil {
		if err := whole(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// atLeast refuses values below least.
func atLeast[T cmp.Ordered](least T) func(T) error {
	return func(v T) error {
		if v < least {
			return fmt.Errorf("must be at least %v, not %v", least, v)
		}
		return nil
	}
}

// between refuses values outside [least, most].
func between[T cmp.Ordered](least, most T) func(T) error {
	return func(v T) error {
		if v < least || v > most {
			return fmt.Errorf("must be from %v to %v, not %v", least, most, v)
		}
		return nil
	}
}

// minLength refuses a set string shorter than n bytes; empty is unset.
func minLength(n int) func(string) error {
	return func(s string) error {
		if s != "" && len(s) < n {
			return fmt.Errorf("must be at least %d bytes", n)
		}
		return nil
	}
}

// formatDuration writes d as a person would: 15m, 720h, 1h30m, 15ms.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
