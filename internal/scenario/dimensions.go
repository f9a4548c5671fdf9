package scenario

import "strings"

// Dimension is one kind of limit that a quota may set (docs/scenario.md,
// "Quota"; docs/concepts.md, "Ceilings on the pool"). The table below is
// the one list of them: the scenario's checks, the plan's ceilings and
// remedies, the simulation's provider, the reports and the tier catalogue
// all read it.
type Dimension int

// The dimensions, in the order in which ties between ceilings are broken.
const (
	RPM Dimension = iota
	TPM
	ITPM
	OTPM
	RPD
	TPD
	NumDimensions
)

// Charge is what one request counts against a limit.
type Charge int

// The charges (docs/concepts.md, "Ceilings on the pool").
const (
	// ChargeRequest counts 1 for every request.
	ChargeRequest Charge = iota
	// ChargeTokens counts input plus output tokens.
	ChargeTokens
	// ChargeInput counts input tokens, less cached input when the key
	// does not count it.
	ChargeInput
	// ChargeOutput counts output tokens (max_tokens when the key counts
	// max_tokens at admission).
	ChargeOutput
)

// dimensions is the table: each dimension's name (its JSON name on a
// quota and its constraint name in plans), whether it is a daily limit
// (else per minute) and what a request counts against it. Its field on
// Quota is field's, beside it.
var dimensions = [NumDimensions]struct {
	name   string
	daily  bool
	charge Charge
}{
	RPM:  {"rpm", false, ChargeRequest},
	TPM:  {"tpm", false, ChargeTokens},
	ITPM: {"itpm", false, ChargeInput},
	OTPM: {"otpm", false, ChargeOutput},
	RPD:  {"rpd", true, ChargeRequest},
	TPD:  {"tpd", true, ChargeTokens},
}

// field is the limit of q on d: the table's last column, written as a
// switch so that reading a limit costs no more than reading a field.
func (q *Quota) field(d Dimension) *float64 {
	switch d {
	case RPM:
		return &q.RPM
	case TPM:
		return &q.TPM
	case ITPM:
		return &q.ITPM
	case OTPM:
		return &q.OTPM
	case RPD:
		return &q.RPD
	case TPD:
		return &q.TPD
	}
	panic("scenario: not a dimension")
}

// chargeWords name what each charge counts.
var chargeWords = [...]string{ChargeRequest: "requests", ChargeTokens: "tokens", ChargeInput: "input tokens", ChargeOutput: "output tokens"}

// String is the dimension's name: its field on a quota (rpm, tpm, ...) and
// the name of its constraint in a plan.
func (d Dimension) String() string { return dimensions[d].name }

// Daily reports whether the limit is per day (else per minute).
func (d Dimension) Daily() bool { return dimensions[d].daily }

// Charge is what one request counts against the limit.
func (d Dimension) Charge() Charge { return dimensions[d].charge }

// Unit names what the dimension counts: "requests" or "tokens".
func (d Dimension) Unit() string {
	if d.Charge() == ChargeRequest {
		return "requests"
	}
	return "tokens"
}

// Period is "min" for a per-minute limit and "day" for a daily one.
func (d Dimension) Period() string {
	if d.Daily() {
		return "day"
	}
	return "min"
}

// Rate is the limit's unit in words: "requests/min", "input tokens/min",
// "tokens/day".
func (d Dimension) Rate() string { return chargeWords[d.Charge()] + "/" + d.Period() }

// DimensionNamed is the dimension whose name is name (rpm, tpm, ...), and
// whether there is one: a plan's constraint is a quota limit when it is.
func DimensionNamed(name string) (Dimension, bool) {
	for d := range NumDimensions {
		if dimensions[d].name == name {
			return d, true
		}
	}
	return 0, false
}

// DimensionNames are the names of the dimensions, in their order.
func DimensionNames() []string {
	names := make([]string, NumDimensions)
	for d := range NumDimensions {
		names[d] = d.String()
	}
	return names
}

// NoLimit is the problem of a quota, or a tier, that sets none of its
// limits.
var NoLimit = func() string {
	names := DimensionNames()
	return "set at least one limit: " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}()

// Limit is q's limit on d, per minute or per day, or 0 when q has none.
func (q Quota) Limit(d Dimension) float64 { return *q.field(d) }

// SetLimit sets q's limit on d (0: none).
func (q *Quota) SetLimit(d Dimension, v float64) { *q.field(d) = v }

// HasLimit reports whether q sets at least one limit.
func (q Quota) HasLimit() bool {
	for d := range NumDimensions {
		if q.Limit(d) > 0 {
			return true
		}
	}
	return false
}

// WithLimitsOf is q with the limits, the token accounting and the price
// of t, its name, headroom and other settings kept: what moving q's key
// to the tier t would give (a tier without a price leaves the key
// without one: its cost is not known).
func (q Quota) WithLimitsOf(t Quota) Quota {
	for d := range NumDimensions {
		q.SetLimit(d, t.Limit(d))
	}
	q.TokenAccounting = t.TokenAccounting
	q.Price = t.Price
	return q
}
