package measure

// PrefillFit is the prefill cost measured by a ladder of input lengths at
// concurrency 1 (docs/probe.md, "Prefill and the prompt cache"): the
// least-squares line
//
//	TTFT = BaseMs + MsPer1K · uncached input tokens / 1000
//
// over the ladder's measured successful requests, the uncached input
// being usage.prompt_tokens less usage.prompt_tokens_details.cached_tokens.
type PrefillFit struct {
	MsPer1K   float64        `json:"ms_per_1k_tokens" doc:"The slope: TTFT added per 1,000 uncached input tokens, milliseconds; a scenario's latency.prefill_ms_per_1k_tokens."`
	MsPer1KCI *Interval      `json:"ms_per_1k_tokens_ci,omitempty" doc:"95 % interval of the slope (Student's t on its standard error)."`
	BaseMs    float64        `json:"base_ms" doc:"The intercept: TTFT with no uncached input, milliseconds."`
	R2        float64        `json:"r2" doc:"Share of the TTFT's variance that the line explains."`
	Requests  int            `json:"requests" doc:"Measured successful requests fitted."`
	Points    []PrefillPoint `json:"points" doc:"The requests by input length, in ascending order."`
}

// PrefillPoint is one length of a prefill ladder: its requests grouped by
// their measured input (lengths within a factor of 1.25 of the group's
// shortest).
type PrefillPoint struct {
	InputTokens  float64 `json:"input_tokens" doc:"Mean input tokens as the endpoint counted them."`
	CachedTokens float64 `json:"cached_tokens,omitempty" doc:"Mean cached input tokens."`
	Requests     int     `json:"requests"`
	TTFTP50Ms    float64 `json:"ttft_p50_ms"`
	TTFTMeanMs   float64 `json:"ttft_mean_ms"`
	FittedMs     float64 `json:"fitted_ms" doc:"The line's TTFT at the group's mean uncached input."`
}

// CacheEffect compares prompts that repeat a long prefix with fresh
// prompts of the same length (docs/probe.md, "Prefill and the prompt
// cache"), requests alternating between the two at concurrency 1.
type CacheEffect struct {
	Fresh        int     `json:"fresh" doc:"Measured successful requests of fresh prompts (a unique start)."`
	Repeated     int     `json:"repeated" doc:"Measured successful requests of prompts that repeat the run's shared prefix."`
	InputTokens  float64 `json:"input_tokens" doc:"Mean input tokens of the repeated prompts."`
	PrefixTokens float64 `json:"prefix_tokens" doc:"Mean tokens of the repeated prompts' shared prefix."`
	// CachedFresh and CachedRepeated are the mean cached tokens the
	// endpoint reported for each kind.
	CachedFresh    float64 `json:"cached_tokens_fresh"`
	CachedRepeated float64 `json:"cached_tokens_repeated"`
	// HitRate is the share of the repeated prefix that came from the
	// cache: Σ cached tokens / Σ prefix tokens over the repeated prompts,
	// at most 1.
	HitRate        float64   `json:"hit_rate" minimum:"0" maximum:"1" doc:"Σ cached tokens / Σ prefix tokens over the repeated prompts (at most 1): the share of a repeated prefix the endpoint served from its cache; a scenario's latency.cache.hit_rate."`
	TTFTFreshMs    float64   `json:"ttft_fresh_mean_ms"`
	TTFTRepeatedMs float64   `json:"ttft_repeated_mean_ms"`
	SavingMs       float64   `json:"ttft_saving_ms" doc:"Mean TTFT of the fresh prompts less that of the repeated ones."`
	SavingMsCI     *Interval `json:"ttft_saving_ms_ci,omitempty" doc:"95 % interval of the saving (Welch's t)."`
	// SavingMsPer1K is the saving per 1,000 cached tokens: SavingMs over
	// the difference of the kinds' mean cached tokens, in thousands; nil
	// when the endpoint reported no more cached tokens for the repeated
	// prompts than for the fresh ones.
	SavingMsPer1K   *float64  `json:"ttft_saving_ms_per_1k,omitempty" doc:"TTFT saved per 1,000 cached tokens: ttft_saving_ms / ((cached_tokens_repeated − cached_tokens_fresh) / 1000); a scenario's latency.cache.ttft_saving_ms_per_1k. Absent when the endpoint reported no cached tokens."`
	SavingMsPer1KCI *Interval `json:"ttft_saving_ms_per_1k_ci,omitempty"`
}

// ConversationStats are the times of a conversation run (docs/probe.md,
// "Conversations"): tasks of several serial calls, each call's input the
// first input plus every earlier answer and tool result, with tool time
// between the calls.
type ConversationStats struct {
	Tasks       int        `json:"tasks" doc:"Measured tasks (warm-up excluded) whose every call succeeded."`
	FailedTasks int        `json:"failed_tasks,omitempty" doc:"Measured tasks that ended at a failed call."`
	Calls       []CallStat `json:"calls" doc:"Per call position, over the measured tasks."`
	// The task's time runs from its first call's send to its last call's
	// end, the tool time between calls included.
	TaskP50Ms  float64   `json:"task_p50_ms"`
	TaskP95Ms  float64   `json:"task_p95_ms"`
	TaskP95CI  *Interval `json:"task_p95_ci,omitempty" doc:"95 % interval of the task time's p95 (order statistics)."`
	TaskMeanMs float64   `json:"task_mean_ms"`
	// LLMShare is Σ call E2E / Σ task time: the share of a task's time in
	// LLM calls, the chance that a task in flight holds a call in flight.
	LLMShare float64 `json:"llm_share" doc:"Σ call E2E / Σ task time over the measured tasks: the share of a task's time spent in LLM calls."`
	// HitRate is Σ cached tokens / Σ prefix tokens over the calls after
	// the first: the share of the earlier context served from the cache.
	HitRate *float64 `json:"hit_rate,omitempty" minimum:"0" maximum:"1" doc:"Σ cached tokens / Σ prefix tokens over the calls after the first (the prefix being the call before's input and output): the share of a task's earlier context that the endpoint served from its cache; absent when no call had a prefix."`
}

// CallStat is one call position of a conversation.
type CallStat struct {
	Call         int     `json:"call"`
	Requests     int     `json:"requests"`
	OK           int     `json:"ok"`
	InputTokens  float64 `json:"input_tokens" doc:"Mean input tokens."`
	CachedTokens float64 `json:"cached_tokens" doc:"Mean cached input tokens."`
	OutputTokens float64 `json:"output_tokens" doc:"Mean output tokens."`
	TTFTP50Ms    float64 `json:"ttft_p50_ms"`
	TTFTP95Ms    float64 `json:"ttft_p95_ms"`
	E2EP50Ms     float64 `json:"e2e_p50_ms"`
	E2EP95Ms     float64 `json:"e2e_p95_ms"`
}
