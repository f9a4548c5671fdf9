package optional

import (
	"encoding/json"
	"testing"
)

func TestValue(t *testing.T) {
	var unset Value[int]
	if v, ok := unset.Get(); ok || v != 0 || unset.IsSet() || !unset.IsZero() || unset.Or(7) != 7 {
		t.Errorf("unset: Get %d %v, IsSet %v, Or(7) %d", v, ok, unset.IsSet(), unset.Or(7))
	}
	zero := Of(0)
	if v, ok := zero.Get(); !ok || v != 0 || !zero.IsSet() || zero.IsZero() || zero.Or(7) != 0 {
		t.Errorf("a zero that is set: Get %d %v, Or(7) %d", v, ok, zero.Or(7))
	}
	b, err := json.Marshal(struct {
		A Value[float64] `json:"a"`
		B Value[float64] `json:"b,omitzero"`
		C Value[float64] `json:"c"`
	}{A: Of(0.5), C: Value[float64]{}})
	if err != nil || string(b) != `{"a":0.5,"c":null}` {
		t.Errorf("JSON %s, %v", b, err)
	}
}
