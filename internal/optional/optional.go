// Package optional holds a value that may be unset: a setting whose
// absence selects a default, where every value of its type, zero and
// negative numbers included, is one that can be set and must be judged as
// given. It replaces "0 means the default" and "-1 means none".
package optional

import "encoding/json"

// Value is a T that is either set or not. The zero Value is unset.
type Value[T any] struct {
	v   T
	set bool
}

// Of is v, set.
func Of[T any](v T) Value[T] { return Value[T]{v: v, set: true} }

// Get returns the value and whether it is set.
func (o Value[T]) Get() (T, bool) { return o.v, o.set }

// Or returns the value when it is set, else def.
func (o Value[T]) Or(def T) T {
	if o.set {
		return o.v
	}
	return def
}

// IsSet reports whether the value is set.
func (o Value[T]) IsSet() bool { return o.set }

// IsZero reports whether the value is unset, for encoding/json's omitzero.
func (o Value[T]) IsZero() bool { return !o.set }

// MarshalJSON encodes the value, or null when it is unset.
func (o Value[T]) MarshalJSON() ([]byte, error) {
	if !o.set {
		return []byte("null"), nil
	}
	return json.Marshal(o.v)
}
