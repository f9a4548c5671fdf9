package config

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fieldpath"
)

func TestSimulationLimits(t *testing.T) {
	cleanEnv(t)
	t.Setenv(EnvPrefix+"_LIMITS_SIMULATION_MAX_EVENTS", "")
	t.Setenv(EnvPrefix+"_LIMITS_SIMULATION_MAX_DURATION", "")
	cfg, err := Load(serveFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.SimulationMaxEvents != DefaultSimulationMaxEvents || cfg.Limits.SimulationMaxDuration != DefaultSimulationMaxDuration {
		t.Errorf("defaults: %+v", cfg.Limits)
	}
	file := writeFile(t, "limits: {simulation_max_events: 50000, simulation_max_duration: 2h}\n")
	cfg, err = Load(serveFlags(t, "--config", file))
	if err != nil || cfg.Limits.SimulationMaxEvents != 50000 || cfg.Limits.SimulationMaxDuration != 2*time.Hour {
		t.Errorf("from a file: %+v, %v", cfg.Limits, err)
	}
	t.Setenv(EnvPrefix+"_LIMITS_SIMULATION_MAX_DURATION", "200h")
	file = writeFile(t, "limits: {simulation_max_events: 10}\n")
	_, err = Load(serveFlags(t, "--config", file))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	for _, want := range []string{"limits.simulation_max_events: must be >= 1000", "limits.simulation_max_duration: must be at most 168h0m0s (set by PLANNER_LIMITS_SIMULATION_MAX_DURATION)"} {
		if !slices.ContainsFunc(ps, func(p fieldpath.Error) bool { return p.Error() == want }) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
