package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// StoredPlan is a plan kept with the scenario it was computed from.
type StoredPlan struct {
	// ID is assigned by SavePlan.
	ID string
	// Name and Labels are the caller's; labels must not carry credentials.
	Name   string
	Labels map[string]string
	// CreatedAt is set by SavePlan to the current time (UTC) when zero.
	CreatedAt time.Time
	// ProbeID names the probe run whose measurements back the plan; empty
	// when none does. The run must exist.
	ProbeID  string
	Scenario scenario.Scenario
	Plan     plan.Plan
}

// SavePlan stores a plan and returns its new id. ErrNotFound means that
// ProbeID names no probe run; ErrSecret that the name or a label carries a
// credential; a *TooLargeError that the plan with its scenario, name and
// labels is larger than the store takes. ErrFull, ErrGone and ErrStarting
// mean it was not stored, for want of room or of the file.
func (s *Store) SavePlan(ctx context.Context, p StoredPlan) (id string, err error) {
	defer s.classifyErr(&err)
	labels := p.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	labelsJSON, err := json.Marshal(labels)
	if err != nil {
		return "", fmt.Errorf("save plan: encode labels: %w", err)
	}
	if err := checkDocument("labels", labelsJSON); err != nil {
		return "", fmt.Errorf("save plan: %w", err)
	}
	if err := checkText("name", p.Name); err != nil {
		return "", fmt.Errorf("save plan: %w", err)
	}
	scenarioJSON, err := json.Marshal(p.Scenario)
	if err != nil {
		return "", fmt.Errorf("save plan: encode scenario: %w", err)
	}
	planJSON, err := encodePlan(p.Plan)
	if err != nil {
		return "", fmt.Errorf("save plan: encode plan: %w", err)
	}
	if err := s.checkSize("plan", len(p.Name)+len(labelsJSON)+len(scenarioJSON)+len(planJSON)); err != nil {
		return "", fmt.Errorf("save plan: %w", err)
	}
	created := p.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	id = newID()
	err = s.write(ctx, func(tx *tx) error {
		probe := sql.NullString{String: p.ProbeID, Valid: p.ProbeID != ""}
		if probe.Valid {
			if _, err := probeSeq(ctx, tx, p.ProbeID); err != nil {
				return fmt.Errorf("backing probe %s: %w", p.ProbeID, err)
			}
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO plans (id, name, labels, created_ns, probe_id, scenario, plan) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, p.Name, string(labelsJSON), created.UnixNano(), probe, string(scenarioJSON), string(planJSON))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("save plan: %w", err)
	}
	return id, nil
}

const planColumns = `seq, id, name, labels, created_ns, probe_id, scenario, plan`

// GetPlan returns the plan with the given id, or ErrNotFound.
func (s *Store) GetPlan(ctx context.Context, id string) (_ StoredPlan, err error) {
	defer s.classifyErr(&err)
	if err := s.usable(ctx); err != nil {
		return StoredPlan{}, fmt.Errorf("get plan %s: %w", id, err)
	}
	row := s.db.QueryRowContext(ctx, `SELECT `+planColumns+` FROM plans WHERE id = ?`, id)
	p, _, err := scanPlan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredPlan{}, fmt.Errorf("plan %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return StoredPlan{}, fmt.Errorf("get plan %s: %w", id, err)
	}
	return p, nil
}

// ListPlans returns one page of stored plans, newest first, and the cursor
// of the next page ("" on the last page).
func (s *Store) ListPlans(ctx context.Context, opts ListOptions) (_ []StoredPlan, _ string, err error) {
	defer s.classifyErr(&err)
	if err := s.usable(ctx); err != nil {
		return nil, "", fmt.Errorf("list plans: %w", err)
	}
	after, err := parseCursor(opts.Cursor, cursorPlans)
	if err != nil {
		return nil, "", fmt.Errorf("list plans: %w", err)
	}
	limit := opts.limit()
	rows, err := s.db.QueryContext(ctx, `SELECT `+planColumns+` FROM plans
		WHERE created_ns < ? OR (created_ns = ? AND seq < ?)
		ORDER BY created_ns DESC, seq DESC LIMIT ?`,
		after.createdNs, after.createdNs, after.seq, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list plans: %w", err)
	}
	defer rows.Close()
	var out []StoredPlan
	var keys []cursor
	for rows.Next() {
		p, key, err := scanPlan(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list plans: %w", err)
		}
		out = append(out, p)
		keys = append(keys, key)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list plans: %w", err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	return out[:limit], keys[limit-1].encode(cursorPlans), nil
}

// PlansForProbe returns the plans that a probe run backs, newest first (at
// most MaxLimit), so that a probe's record card can show the pools planned
// on its measurements. ErrNotFound means no such run.
func (s *Store) PlansForProbe(ctx context.Context, probeID string) (_ []StoredPlan, err error) {
	defer s.classifyErr(&err)
	if err := s.usable(ctx); err != nil {
		return nil, fmt.Errorf("plans of probe %s: %w", probeID, err)
	}
	if _, err := probeSeq(ctx, s.db, probeID); err != nil {
		return nil, fmt.Errorf("plans of probe %s: %w", probeID, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+planColumns+` FROM plans WHERE probe_id = ?
		ORDER BY created_ns DESC, seq DESC LIMIT ?`, probeID, MaxLimit)
	if err != nil {
		return nil, fmt.Errorf("plans of probe %s: %w", probeID, err)
	}
	defer rows.Close()
	var out []StoredPlan
	for rows.Next() {
		p, _, err := scanPlan(rows)
		if err != nil {
			return nil, fmt.Errorf("plans of probe %s: %w", probeID, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("plans of probe %s: %w", probeID, err)
	}
	return out, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanPlan(sc scanner) (StoredPlan, cursor, error) {
	var p StoredPlan
	var key cursor
	var labels, scenarioJSON, planJSON string
	var probe sql.NullString
	if err := sc.Scan(&key.seq, &p.ID, &p.Name, &labels, &key.createdNs, &probe, &scenarioJSON, &planJSON); err != nil {
		return p, key, err
	}
	p.CreatedAt = time.Unix(0, key.createdNs).UTC()
	p.ProbeID = probe.String
	if err := json.Unmarshal([]byte(labels), &p.Labels); err != nil {
		return p, key, fmt.Errorf("plan %s: decode labels: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(scenarioJSON), &p.Scenario); err != nil {
		return p, key, fmt.Errorf("plan %s: decode scenario: %w", p.ID, err)
	}
	pl, err := decodePlan([]byte(planJSON))
	if err != nil {
		return p, key, fmt.Errorf("plan %s: decode plan: %w", p.ID, err)
	}
	p.Plan = pl
	return p, key, nil
}
