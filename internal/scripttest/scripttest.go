// Package scripttest is what the interpreters of floe's data-driven test
// scripts share (testdata/*.txt files of commands and expected output,
// run by github.com/cockroachdb/datadriven; -rewrite rewrites the
// expectations): walking a directory of scripts with fresh state per file,
// typed optional arguments, and rejecting arguments a command does not
// know, so a misspelt one fails the script instead of being ignored.
package scripttest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Walk runs every script under dir; each file gets its own interpreter
// from newRun, so one script's state never leaks into another's.
func Walk(t *testing.T, dir string, newRun func(t *testing.T) func(t *testing.T, d *datadriven.TestData) string) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		datadriven.RunTest(t, path, newRun(t))
	})
}

// Known fails the command if it has an argument not in keys.
func Known(t *testing.T, d *datadriven.TestData, keys ...string) {
	t.Helper()
	for _, a := range d.CmdArgs {
		if !slices.Contains(keys, a.Key) {
			d.Fatalf(t, "%s: unknown argument %q (want one of %v)", d.Cmd, a.Key, keys)
		}
	}
}

func arg(d *datadriven.TestData, key string) (datadriven.CmdArg, bool) {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return a, true
		}
	}
	return datadriven.CmdArg{}, false
}

// Str is the argument key, or def when it is absent.
func Str(t *testing.T, d *datadriven.TestData, key, def string) string {
	t.Helper()
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	return s
}

// Int is the integer argument key, or def when it is absent.
func Int(t *testing.T, d *datadriven.TestData, key string, def int64) int64 {
	t.Helper()
	if !d.HasArg(key) {
		return def
	}
	var n int64
	d.ScanArgs(t, key, &n)
	return n
}

// Float is the number argument key, or def when it is absent.
func Float(t *testing.T, d *datadriven.TestData, key string, def float64) float64 {
	t.Helper()
	s := Str(t, d, key, "")
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return f
}

// Dur is the duration argument key (time.ParseDuration), or def when it
// is absent.
func Dur(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	t.Helper()
	s := Str(t, d, key, "")
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}

// List is the values of argument key (key=(a, b) or key=a); ok is false
// when it is absent. key=() is an empty, non-nil list.
func List(d *datadriven.TestData, key string) (vals []string, ok bool) {
	a, ok := arg(d, key)
	if !ok {
		return nil, false
	}
	vals = []string{}
	for _, v := range a.Vals {
		if v != "" {
			vals = append(vals, v)
		}
	}
	return vals, true
}

// Arg is the first argument of the command, for positional forms such as
// "advance 10s" (an argument without a value); "" when there is none.
func Arg(d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 {
		return ""
	}
	return d.CmdArgs[0].Key
}
