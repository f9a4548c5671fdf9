package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Pointer is a JSON Pointer (RFC 6901) into a scenario, resolved against
// the scenario's types: each reference token names a field by its JSON
// name, or indexes a list. What-if variations, remedies, the command
// line's --vary and the API's tier variations read their paths with
// ParsePointer, check a value with Check and write it with Scenario.Set.
type Pointer struct {
	text  string
	steps []step
	typ   reflect.Type      // the type of the field it points at
	tag   reflect.StructTag // that field's tag; empty for a list element
	// optional is set when the field may be left out (omitempty,
	// omitzero, or a list): a null value there means "absent".
	optional bool
}

// step is one reference token: a struct field (field >= 0) or a list
// index.
type step struct {
	field int
	index int
}

// ParsePointer reads a JSON Pointer and resolves it against the types of
// a scenario. The error says why text is not a pointer to a field of a
// scenario: it does not start with /, it escapes ~ wrongly, or a token
// names no field (or is not a list index where a list is).
func ParsePointer(text string) (Pointer, error) {
	if !strings.HasPrefix(text, "/") {
		return Pointer{}, errors.New("a JSON Pointer starts with /, as in /quotas/0/tpm")
	}
	p := Pointer{text: text, typ: reflect.TypeFor[Scenario]()}
	noField := fmt.Errorf("no field at %s in the scenario", text)
	for _, tok := range strings.Split(text[1:], "/") {
		tok, ok := unescapeToken(tok)
		if !ok {
			return Pointer{}, fmt.Errorf("%s is not a JSON Pointer: write ~ as ~0 and / as ~1", text)
		}
		t := p.typ
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			fs := structFields(t)
			f, ok := fs.byName[tok]
			if !ok {
				return Pointer{}, noField
			}
			p.steps = append(p.steps, step{field: f.Index[0]})
			p.typ, p.tag = f.Type, f.Tag
			p.optional = !fs.isRequired(tok) || f.Type.Kind() == reflect.Slice
		case reflect.Slice:
			i, ok := listIndex(tok)
			if !ok {
				return Pointer{}, noField
			}
			p.steps = append(p.steps, step{field: -1, index: i})
			p.typ, p.tag, p.optional = t.Elem(), "", false
		default:
			return Pointer{}, noField
		}
	}
	return p, nil
}

// unescapeToken undoes RFC 6901's escapes: ~1 is /, ~0 is ~; any other ~
// is an error.
func unescapeToken(tok string) (string, bool) {
	if !strings.Contains(tok, "~") {
		return tok, true
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		if tok[i] != '~' {
			b.WriteByte(tok[i])
			continue
		}
		if i+1 == len(tok) || (tok[i+1] != '0' && tok[i+1] != '1') {
			return "", false
		}
		b.WriteByte("~/"[tok[i+1]-'0'])
		i++
	}
	return b.String(), true
}

// listIndex reads an array index as RFC 6901 writes it: 0, or digits
// without a leading zero.
func listIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') || strings.Trim(tok, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(tok)
	return i, err == nil
}

// String is the pointer as written.
func (p Pointer) String() string { return p.text }

// Location is where a problem at the pointer is reported:
// "classes[0].output_tokens.p95" for /classes/0/output_tokens/p95.
func (p Pointer) Location() string {
	var b strings.Builder
	t := reflect.TypeFor[Scenario]()
	for _, st := range p.steps {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if st.field < 0 {
			fmt.Fprintf(&b, "[%d]", st.index)
			t = t.Elem()
			continue
		}
		f := t.Field(st.field)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(name)
		t = f.Type
	}
	return b.String()
}

// QuotaIndex is N when the pointer is /quotas/N, a whole quota.
func (p Pointer) QuotaIndex() (int, bool) {
	if len(p.steps) != 2 || p.steps[1].field >= 0 || reflect.TypeFor[Scenario]().Field(p.steps[0].field).Name != "Quotas" {
		return 0, false
	}
	return p.steps[1].index, true
}

// Check returns the problems that the scenario's field rules (the struct
// tags, as Parse applies them) find in value at the pointer, located as
// Parse locates them: a value of the wrong type, out of range, or an
// object with unknown or missing members. Null leaves out a field that may
// be left out.
func (p Pointer) Check(value any) Errors {
	doc, err := generic(value)
	if err != nil {
		return Errors{{Path: p.Location(), Message: err.Error()}}
	}
	if doc == nil && p.optional {
		return nil
	}
	var v validator
	v.value(p.Location(), doc, p.typ, p.tag)
	return v.errs
}

// generic is value as a decoded JSON document: maps, lists, float64,
// string, bool and nil.
func generic(value any) (any, error) {
	switch value.(type) {
	case nil, float64, string, bool:
		return value, nil
	}
	b, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("the value is not JSON: %w", err)
	}
	var doc any
	err = json.Unmarshal(b, &doc)
	return doc, err
}

// Reaches reports, as an error, when s lacks a list element or an optional
// object on the way to p: Set could not write there.
func (s Scenario) Reaches(p Pointer) error {
	_, err := s.Set(p, nil)
	return err
}

// Set returns a copy of s with value at p, a value that p.Check accepts:
// a number, or a JSON value (as decoded by encoding/json, or a Go value
// that encodes to one) of the field's type; nil leaves the field out. A
// number is rounded down for an integer field. Only what lies on the
// path is copied, the rest is shared with s, which planning never writes
// into; as a JSON Patch "replace" or "add", every list element and every
// optional object on the path must exist, while the settings objects that
// a scenario always has (policy, the top-level latency) are written into
// even when its JSON leaves them out.
func (s Scenario) Set(p Pointer, value any) (Scenario, error) {
	out := s
	v := reflect.ValueOf(&out).Elem()
	for k, st := range p.steps {
		if st.field >= 0 {
			v = v.Field(st.field)
		} else {
			if st.index >= v.Len() {
				return s, fmt.Errorf("no field at %s in the scenario", p.text)
			}
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			v.Set(c)
			v = v.Index(st.index)
		}
		if v.Kind() == reflect.Pointer && k < len(p.steps)-1 {
			if v.IsNil() {
				return s, fmt.Errorf("no field at %s in the scenario", p.text)
			}
			c := reflect.New(v.Type().Elem())
			c.Elem().Set(v.Elem())
			v.Set(c)
			v = c.Elem()
		}
	}
	if err := assign(v, value); err != nil {
		return s, fmt.Errorf("set %s: %w", p.text, err)
	}
	return out, nil
}

// assign writes value into v: a number straight into a number field (the
// remedies' path, which costs no encoding), anything else through its
// JSON encoding.
func assign(v reflect.Value, value any) error {
	if value == nil {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if f, ok := value.(float64); ok {
		t := v
		if v.Kind() == reflect.Pointer {
			t = reflect.New(v.Type().Elem()).Elem()
		}
		switch t.Kind() {
		case reflect.Float64:
			t.SetFloat(f)
		case reflect.Int:
			t.SetInt(int64(f))
		default:
			return assignJSON(v, value)
		}
		if v.Kind() == reflect.Pointer {
			v.Set(t.Addr())
		}
		return nil
	}
	return assignJSON(v, value)
}

func assignJSON(v reflect.Value, value any) error {
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	dst := reflect.New(v.Type())
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst.Interface()); err != nil {
		return err
	}
	v.Set(dst.Elem())
	return nil
}
