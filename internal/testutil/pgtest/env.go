package pgtest

// Environment variables of the tests.
const (
	// RequireEnv set to 1 turns a missing PostgreSQL into a failure.
	RequireEnv = "PLANNER_REQUIRE_POSTGRES"
	// BinEnv names the directory of initdb and postgres, when they are not
	// where pg_config --bindir or Debian (/usr/lib/postgresql/N/bin) puts
	// them.
	BinEnv = "PLANNER_POSTGRES_BIN"
)
