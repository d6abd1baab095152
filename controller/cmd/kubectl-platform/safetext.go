package main

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text the CLI prints from the cluster (an Event a tenant wrote about its own copy, a condition
// message, a name) is the writer's to choose: a newline would forge a table row, an escape
// sequence would clear the screen, set a hyperlink or write the clipboard. So every string of a
// report passes through safeText before any output format sees it (printReport): control
// characters, bidirectional overrides and invalid UTF-8 are shown escaped (\n, \x1b, \u202e), and
// a field is cut at maxFieldBytes.

// maxFieldBytes bounds one printed field. A condition message may hold 32 KiB.
const maxFieldBytes = 1024

// safeText is s with what a terminal would act on escaped, cut to at most limit bytes of output
// (then it says how many bytes of s were left out).
func safeText(s string, limit int) string {
	if len(s) <= limit && !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unsafeRune(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size <= 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case unsafeRune(r):
			piece = escapeRune(r)
		default:
			piece = s[i : i+size]
		}
		if b.Len()+len(piece) > limit {
			fmt.Fprintf(&b, "... (%d more bytes)", len(s)-i)
			return b.String()
		}
		b.WriteString(piece)
		i += size
	}
	return b.String()
}

// unsafeRune reports whether a terminal could act on r: a control character (C0, DEL, C1, which
// includes newline and tab) or a bidirectional formatting character.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// safeCopy returns a deep copy of v with every string (struct fields, slice and map elements, map
// keys) through safeText. Values without exported fields (time.Time) are copied as they are.
func safeCopy[T any](v T) T {
	out := safeValue(reflect.ValueOf(&v).Elem())
	return out.Interface().(T)
}

func safeValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(safeText(v.String(), maxFieldBytes))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(safeValue(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(safeValue(v.Elem()))
		return out
	case reflect.Slice, reflect.Array:
		out := reflect.New(v.Type()).Elem()
		if v.Kind() == reflect.Slice {
			if v.IsNil() {
				return v
			}
			out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		}
		for i := range v.Len() {
			out.Index(i).Set(safeValue(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(safeValue(it.Key()), safeValue(it.Value()))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(safeValue(v.Field(i)))
			}
		}
		return out
	}
	return v
}
