package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/plannerdev/planner/internal/measure"
)

// writeSLO prints, after a step table, how each step met the SLO that
// goodput counted against: the requests that met every target, their
// share and its interval. It prints nothing without an SLO.
func writeSLO(w io.Writer, res measure.Result) error {
	if res.SLO == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nSLO %s: goodput counts the requests that met every target at once\n", res.SLO)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "concurrency\tmet\trequests\tattainment\t95 % interval\tgoodput_rps")
	for _, s := range res.Steps {
		if s.SLO == nil {
			continue
		}
		iv := "-"
		if ci := s.SLO.AttainmentCI; ci != nil {
			iv = fmt.Sprintf("%.1f to %.1f %%", 100*ci.Lo, 100*ci.Hi)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f %%\t%s\t%.3f\n", s.Concurrency, s.SLO.Met, s.Requests, 100*s.SLO.Attainment, iv, s.GoodputRPS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePromptCost prints what a prefill ladder, a cache comparison or a
// conversation measured: the prefill line and its points, the cache's
// effect, or the times per call and per task. It prints nothing for a
// concurrency ramp.
func writePromptCost(w io.Writer, res measure.Result) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if p := res.Prefill; p != nil {
		fmt.Fprintf(&b, "\nprefill: TTFT = %.1f ms + %g ms per 1,000 uncached input tokens (95 %% interval %g to %g, R² %.4f, %d requests)\n",
			p.BaseMs, p.MsPer1K, p.MsPer1KCI.Lo, p.MsPer1KCI.Hi, p.R2, p.Requests)
		fmt.Fprintln(tw, "input_tokens\tcached\trequests\tttft_p50\tttft_mean\tfitted")
		for _, pt := range p.Points {
			fmt.Fprintf(tw, "%.0f\t%.0f\t%d\t%.1f\t%.1f\t%.1f\n", pt.InputTokens, pt.CachedTokens, pt.Requests, pt.TTFTP50Ms, pt.TTFTMeanMs, pt.FittedMs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if c := res.Cache; c != nil {
		fmt.Fprintf(&b, "\ncache: %d repeated and %d fresh prompts of %.0f tokens; a repeated prefix of %.0f tokens had %.0f cached (fresh: %.0f), hit rate %.4g\n",
			c.Repeated, c.Fresh, c.InputTokens, c.PrefixTokens, c.CachedRepeated, c.CachedFresh, c.HitRate)
		fmt.Fprintf(&b, "cache: TTFT %.1f ms repeated, %.1f ms fresh: %.1f ms saved (95 %% interval %.1f to %.1f)", c.TTFTRepeatedMs, c.TTFTFreshMs, c.SavingMs, c.SavingMsCI.Lo, c.SavingMsCI.Hi)
		if s := c.SavingMsPer1K; s != nil {
			fmt.Fprintf(&b, ", %g ms per 1,000 cached tokens (%g to %g)", *s, c.SavingMsPer1KCI.Lo, c.SavingMsPer1KCI.Hi)
		}
		b.WriteByte('\n')
	}
	if c := res.Conversation; c != nil {
		fmt.Fprintf(&b, "\nconversation: %d tasks measured (%d failed); task p50 %.0f ms, p95 %.0f ms, mean %.0f ms, %.1f %% of it in calls",
			c.Tasks, c.FailedTasks, c.TaskP50Ms, c.TaskP95Ms, c.TaskMeanMs, 100*c.LLMShare)
		if h := c.HitRate; h != nil {
			fmt.Fprintf(&b, "; the cache served %.4g of the earlier context", *h)
		}
		b.WriteByte('\n')
		fmt.Fprintln(tw, "call\trequests\tok\tinput_tokens\tcached\toutput_tokens\tttft_p50\tttft_p95\te2e_p50\te2e_p95")
		for _, s := range c.Calls {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\n", s.Call, s.Requests, s.OK, s.InputTokens, s.CachedTokens, s.OutputTokens,
				s.TTFTP50Ms, s.TTFTP95Ms, s.E2EP50Ms, s.E2EP95Ms)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
