package api

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/sse"

	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/measure"
)

// ProbeStatusEvent is the data of a status event: the probe's status.
type ProbeStatusEvent struct {
	Status string `json:"status" enum:"queued,running,succeeded,failed,cancelled,interrupted"`
}

func (s *Server) registerProbeEvents() {
	op := huma.Operation{
		OperationID: "get-probe-events",
		Method:      http.MethodGet,
		Path:        "/v1/probes/{id}/events",
		Summary:     "Follow a probe's progress",
		Description: "Streams a probe's progress as server-sent events. A running probe sends status (its current " +
			"status), a step event for each step already finished, then, live: progress (the running step's " +
			"finished requests, ok, rate_limited and errors, at most every 250 ms while they change), step (each " +
			"step's summary as it finishes), status (the final status) and done (the whole probe, as GET returns " +
			"it), after which the stream ends. A probe that has already ended sends done at once. Any replica " +
			"streams any probe: the events are stored as they happen, so a client that reads slowly only falls " +
			"behind and never holds the probe back.",
		Tags:   []string{tagProbes},
		Errors: notFoundStatuses,
		Middlewares: huma.Middlewares{func(ctx huma.Context, next func(huma.Context)) {
			if _, err := s.storedProbe(ctx.Context(), ctx.Param("id")); err != nil {
				writeHumaError(s.api, ctx, err)
				return
			}
			next(ctx)
		}},
	}
	// progress: the running step's finished requests so far, at most every
	// 250 ms while they change; step: the summary of the step just
	// finished (warm-up excluded); done, the last: the probe as GET
	// /v1/probes/{id} returns it once it has ended.
	events := map[string]any{
		"status":   ProbeStatusEvent{},
		"progress": jobs.Progress{},
		"step":     measure.Step{},
		"done":     Probe{},
	}
	sse.Register(s.api, op, events, s.probeEvents)
	s.labels[op.Method+" "+op.Path] = op.OperationID
	s.declareEvents(op.Path, events)
}

// declareEvents declares the answer of the events operation at path as
// what it is on the wire: text/event-stream, UTF-8 text in which each
// event is an event line naming it and a data line holding one JSON
// document. The schema of each event's data is under the event's name in
// the stream schema's $defs, where JSON Schema keeps the schemas that a
// schema refers to: OpenAPI 3.1 has no field for the items of a stream.
// huma's own declaration, a JSON array of event objects, is what no
// client receives.
func (s *Server) declareEvents(path string, events map[string]any) {
	reg := s.OpenAPI().Components.Schemas
	defs := map[string]*huma.Schema{}
	var names []string
	for name, v := range events {
		defs[name] = reg.Schema(reflect.TypeOf(v), true, "")
		names = append(names, fmt.Sprintf("%s (%s)", name, strings.TrimPrefix(defs[name].Ref, "#/components/schemas/")))
	}
	slices.Sort(names)
	s.OpenAPI().Paths[path].Get.Responses["200"].Content = map[string]*huma.MediaType{
		"text/event-stream": {Schema: &huma.Schema{
			Type:  huma.TypeString,
			Title: "Server-sent events",
			Description: "A stream of server-sent events (text/event-stream, UTF-8), not a JSON document: each event is " +
				"an `event:` line with its name, a `data:` line with one JSON document, and a blank line. The data of " +
				"each event has the schema of its name under `$defs`: " + strings.Join(names, ", ") + ".",
			Extensions: map[string]any{"$defs": defs},
		}},
	}
}

// writeHumaError answers with the problem of a huma status error.
func writeHumaError(api huma.API, ctx huma.Context, err error) {
	se, ok := err.(huma.StatusError)
	if !ok {
		se = huma.Error500InternalServerError("the request failed")
	}
	var details []error
	if em, ok := se.(*huma.ErrorModel); ok {
		for _, d := range em.Errors {
			details = append(details, d)
		}
		_ = huma.WriteErr(api, ctx, em.Status, em.Detail, details...)
		return
	}
	_ = huma.WriteErr(api, ctx, se.GetStatus(), se.Error())
}

func (s *Server) probeEvents(ctx context.Context, in *probeIDInput, send sse.Sender) {
	done := func() error {
		run, err := s.store.GetProbe(ctx, in.ID)
		if err != nil {
			s.log.Error("read a probe for its done event", "probe", in.ID, "error", err)
			return err
		}
		return send.Data(probeResource(run))
	}
	if s.jobs == nil {
		_ = done()
		return
	}
	// The events come from the store, whichever service runs the probe.
	err := s.jobs.Follow(ctx, in.ID, func(ev jobs.Event) error {
		switch ev.Kind {
		case jobs.EventStatus:
			return send.Data(ProbeStatusEvent{Status: string(ev.Status)})
		case jobs.EventProgress:
			return send.Data(ev.Progress)
		case jobs.EventStep:
			return send.Data(ev.Step)
		case jobs.EventDone:
			return done()
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("a probe's event stream ended early", "probe", in.ID, "error", err)
	}
}
