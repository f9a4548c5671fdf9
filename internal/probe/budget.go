package probe

import "sync"

// Stop reasons of a run, as steps.json reports them.
const (
	StopCompleted      = "completed"       // every step ran
	StopMax429Ratio    = "max_429_ratio"   // a step's 429 ratio passed Config.Max429Ratio
	StopGoodputFalling = "goodput_falling" // goodput fell for two steps in a row
	StopNoSuccess      = "no_success"      // a step had no successful response
	StopBudgetRequests = "budget_requests" // Budget.MaxRequests spent
	StopBudgetTokens   = "budget_tokens"   // Budget.MaxTokens spent
	StopBudgetDuration = "budget_duration" // Budget.MaxDuration spent
	StopCancelled      = "cancelled"       // the caller cancelled the run
)

// budget tracks a run's request and token spend; it is safe for concurrent
// use. Tokens are reserved at send for the worst case and settled to the
// usage reported, so the token budget is never exceeded.
type budget struct {
	mu          sync.Mutex
	maxRequests int // 0: unbounded
	maxTokens   int // 0: unbounded
	requests    int // sends so far
	tokens      int // tokens used plus reserved
	spent       string
}

// admit takes a request's first send and reserves its tokens; it reports
// false, and remembers which budget is spent, when either would pass its
// limit.
func (b *budget) admit(reserve int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.maxRequests > 0 && b.requests+1 > b.maxRequests:
		b.spend(StopBudgetRequests)
		return false
	case b.maxTokens > 0 && b.tokens+reserve > b.maxTokens:
		b.spend(StopBudgetTokens)
		return false
	}
	b.requests++
	b.tokens += reserve
	return true
}

// retry takes one more send of an admitted request.
func (b *budget) retry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.maxRequests > 0 && b.requests+1 > b.maxRequests {
		b.spend(StopBudgetRequests)
		return false
	}
	b.requests++
	return true
}

// settle replaces a request's reservation by the tokens it used.
func (b *budget) settle(reserve, used int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens += used - reserve
}

func (b *budget) spend(reason string) {
	if b.spent == "" {
		b.spent = reason
	}
}

// room reports whether the request budget has room for n more sends.
func (b *budget) room(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent == "" && (b.maxRequests == 0 || b.requests+n <= b.maxRequests)
}

// exhausted returns the stop reason of the first budget spent, or "".
func (b *budget) exhausted() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// used returns the sends and tokens so far (tokens include reservations of
// requests in flight).
func (b *budget) used() (requests, tokens int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests, b.tokens
}
