package scenario

import (
	"strings"
	"testing"
)

// TestDerivedRateIsBounded: requests within_hours may come to at most the
// rate rpm may state (1e9 a minute); beyond, or at +Inf, Check names
// within_hours.
func TestDerivedRateIsBounded(t *testing.T) {
	for _, tc := range []struct {
		d  Demand
		ok bool
	}{
		{Demand{Requests: 1e12, WithinHours: 1e-300}, false},
		{Demand{Requests: 1, WithinHours: 1e-300}, false},
		{Demand{Requests: 1e9, WithinHours: 1.0 / 60 * 0.99}, false},
		{Demand{Requests: 1e9, WithinHours: 1.0 / 60}, true},
		{Demand{Requests: 50000, WithinHours: 6}, true},
	} {
		var c checker
		c.demand("classes[0].demand", tc.d)
		switch {
		case tc.ok && len(c.errs) > 0:
			t.Errorf("%+v: %v", tc.d, c.errs)
		case !tc.ok && (len(c.errs) != 1 || c.errs[0].Path != "classes[0].demand.within_hours" || !strings.Contains(c.errs[0].Message, "rpm's maximum")):
			t.Errorf("%+v: %v, want one problem at within_hours", tc.d, c.errs)
		}
	}
}

// TestDailyRatesAreBounded: a daily limit spread over so few active hours
// that it allows more a second than the per-minute limit may state is
// refused at active_hours.
func TestDailyRatesAreBounded(t *testing.T) {
	for _, tc := range []struct {
		q  Quota
		ok bool
	}{
		{Quota{RPD: 1e13, ActiveHours: 1e-300}, false},
		{Quota{TPD: 1e15, ActiveHours: 1e-300}, false},
		{Quota{TPD: 1e15, ActiveHours: 0.01}, false},
		{Quota{RPD: 1e13, ActiveHours: 1}, true},
		{Quota{RPD: 1e13}, true},
		{Quota{RPM: 600, ActiveHours: 1e-300}, true},
	} {
		var c checker
		c.dailyRates("quotas[0]", tc.q)
		switch {
		case tc.ok && len(c.errs) > 0:
			t.Errorf("%+v: %v", tc.q, c.errs)
		case !tc.ok && (len(c.errs) != 1 || c.errs[0].Path != "quotas[0].active_hours"):
			t.Errorf("%+v: %v, want one problem at active_hours", tc.q, c.errs)
		}
	}
}
