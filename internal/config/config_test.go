package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/configs"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/scenario"
)

// cleanEnv unsets every variable Load reads, so that the machine's
// environment cannot leak into a test.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"CONFIG", "LISTEN", "DB", "AUTH_TOKENS", "LIMITS_MAX_BODY_BYTES", "PROBE_ALLOW", "PROBE_MAX_RUNNING", "ALLOWED_HOSTS", "ALLOWED_ORIGINS"} {
		t.Setenv(EnvPrefix+"_"+name, "")
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "planner.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveFlags is the flag set of `planner serve`.
func serveFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.String("listen", DefaultListen, "")
	fs.String("db", DefaultDB, "")
	fs.String("config", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestLoadDefaults(t *testing.T) {
	cleanEnv(t)
	cfg, err := Load(serveFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := DefaultTiers()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != DefaultListen || cfg.DB != DefaultDB || cfg.Limits.MaxBodyBytes != DefaultMaxBodyBytes || len(cfg.Auth.Tokens) != 0 {
		t.Errorf("defaults: got %+v", cfg)
	}
	if len(cfg.Tiers) == 0 || !reflect.DeepEqual(cfg.Tiers, defaults) {
		t.Errorf("tiers: got %v, want the default catalogue %v", cfg.Tiers, defaults)
	}
	if _, err := Load(nil); err != nil {
		t.Errorf("Load(nil): %v", err)
	}
}

// TestDefaultTiersAreLabelledExamples keeps the shipped catalogue from
// passing as any provider's real limits.
func TestDefaultTiersAreLabelledExamples(t *testing.T) {
	tiers, err := DefaultTiers()
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range tiers {
		if !strings.HasPrefix(tier.Name, "example-") || !strings.Contains(strings.ToLower(tier.Description), "example") {
			t.Errorf("tier %q is not labelled as an example: %q", tier.Name, tier.Description)
		}
		// Example prices say when they were written: prices change.
		if tier.Price == nil || !regexp.MustCompile(`not a real .*price.*written \d{4}-\d{2}-\d{2}`).MatchString(tier.Description) {
			t.Errorf("tier %q has no price marked as an example with its date: %q", tier.Name, tier.Description)
		}
	}
	if !strings.Contains(string(configs.Tiers), "PRICES ARE EXAMPLE\n# PRICES WRITTEN ON 2026-12-01") {
		t.Error("configs/tiers.yaml does not say that its prices are examples, and when they were written")
	}
	if ps := (Config{Listen: DefaultListen, DB: DefaultDB, Limits: Limits{MaxBodyBytes: DefaultMaxBodyBytes, PlanTimeout: DefaultPlanTimeout}, Probe: DefaultProbe(), Tiers: tiers}).Validate(); len(ps) > 0 {
		t.Errorf("default catalogue is invalid: %v", ps)
	}
}

func TestLoadEnvOverridesFileAndFlagOverridesEnv(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
listen: 127.0.0.1:9001
db: file.db
limits: {max_body_bytes: 4096}
tiers:
  - {name: mine, description: "my key", rpm: 10}
`)
	t.Setenv("PLANNER_CONFIG", file)

	cfg, err := Load(serveFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9001" || cfg.DB != "file.db" || cfg.Limits.MaxBodyBytes != 4096 {
		t.Errorf("file: got %+v", cfg)
	}
	if len(cfg.Tiers) != 1 || cfg.Tiers[0].Name != "mine" || cfg.Tiers[0].TokenAccounting != "actual" {
		t.Errorf("file tiers replace the defaults, with accounting actual by default: got %+v", cfg.Tiers)
	}

	t.Setenv("PLANNER_LISTEN", "127.0.0.1:9002")
	t.Setenv("PLANNER_DB", "env.db")
	t.Setenv("PLANNER_AUTH_TOKENS", "first-token-0123456789, second-token-0123456789")
	t.Setenv("PLANNER_LIMITS_MAX_BODY_BYTES", "8192")
	cfg, err = Load(serveFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9002" || cfg.DB != "env.db" || cfg.Limits.MaxBodyBytes != 8192 {
		t.Errorf("env: got %+v", cfg)
	}
	if want := []string{"first-token-0123456789", "second-token-0123456789"}; !slices.Equal(cfg.Auth.Tokens, want) {
		t.Errorf("PLANNER_AUTH_TOKENS: got %q, want %q", cfg.Auth.Tokens, want)
	}

	cfg, err = Load(serveFlags(t, "--listen", "127.0.0.1:9003", "--db", "flag.db"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9003" || cfg.DB != "flag.db" {
		t.Errorf("flags: got listen %q db %q", cfg.Listen, cfg.DB)
	}
}

func TestLoadConfigFlagBeatsEnv(t *testing.T) {
	cleanEnv(t)
	t.Setenv("PLANNER_CONFIG", writeFile(t, "db: from-env-file.db\n"))
	flagFile := writeFile(t, "db: from-flag-file.db\n")
	cfg, err := Load(serveFlags(t, "--config", flagFile))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DB != "from-flag-file.db" {
		t.Errorf("--config should win over PLANNER_CONFIG: db %q", cfg.DB)
	}
}

func TestLoadExampleFile(t *testing.T) {
	cleanEnv(t)
	cfg, err := Load(serveFlags(t, "--config", "../../configs/planner.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tiers) != 3 || cfg.Tiers[2].Price == nil || !cfg.Tiers[2].Price.Provisioned() || cfg.Listen != DefaultListen {
		t.Errorf("got %+v", cfg)
	}
}

// TestLoadListsEveryProblem checks that one bad file reports all of its
// mistakes, each by its YAML path, in path order.
func TestLoadListsEveryProblem(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
listen: 0.0.0.0
db: ""
auth:
  tokens: [short, "has space in it 0123456789"]
limits:
  max_body_bytes: 10
tiers:
  - {name: ok, description: fine, rpm: 10}
  - {name: ok, description: dup, tpm: 10}
  - {name: bad, description: negative, rpm: -1, token_accounting: sometimes}
  - {name: "", description: "", tpm: 5}
  - {name: nolimit, description: "no limits at all"}
  - {name: "-x", description: bad name, rpm: 1}
`)
	_, err := Load(serveFlags(t, "--config", file))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	want := []string{
		"auth.tokens[0]: must be at least 16 characters long",
		"auth.tokens[1]: must be printable ASCII without spaces",
		"db: required",
		"limits.max_body_bytes: must be >= 1024",
		"listen: must be host:port, for example 127.0.0.1:8080 (port 0 picks a free one)",
		`tiers[1].name: duplicate tier name "ok" (also tiers[0])`,
		"tiers[2].rpm: must be >= 0",
		"tiers[2].token_accounting: must be one of: actual, max_tokens",
		"tiers[3].description: required",
		"tiers[3].name: required",
		"tiers[4]: set at least one limit: rpm, tpm, itpm, otpm, rpd or tpd",
		"tiers[5].name: must start with a letter or digit and hold only letters, digits, '.', '_' and '-'",
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message lacks %q:\n%s", w, err)
		}
	}
}

func TestLoadRefusesUnknownKeysAndWrongTypes(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
lisen: 127.0.0.1:1
auth: {tokenz: [x]}
limits: {max_body_bytes: lots}
tiers:
  - {name: a, description: a, rpm: 1, rpmx: 2}
`)
	_, err := Load(serveFlags(t, "--config", file))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	for _, want := range []string{
		"auth.tokenz: unknown setting",
		"limits.max_body_bytes: cannot read lots as an integer",
		"lisen: unknown setting",
		"tiers[0].rpmx: unknown setting",
	} {
		if !slices.ContainsFunc(ps, func(p fieldpath.Error) bool { return p.Error() == want }) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// TestLoadNamesTheVariable: a problem with a value that a PLANNER_*
// variable or a flag set names it, since the file (if any) does not hold
// that value; the value itself, which may be a token, is not repeated.
func TestLoadNamesTheVariable(t *testing.T) {
	cleanEnv(t)
	t.Setenv("PLANNER_LIMITS_MAX_BODY_BYTES", "abc")
	t.Setenv("PLANNER_AUTH_TOKENS", "short-secret")
	t.Setenv("PLANNER_PROBE_ALLOW", "loopback,bogus::")
	t.Setenv("PLANNER_LISTEN", "127.0.0.1:1")
	_, err := Load(serveFlags(t, "--config", writeFile(t, "limits: {plan_timeout: 1ms}\n"), "--listen", "nowhere"))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	want := []string{
		"auth.tokens[0]: must be at least 16 characters long (set by PLANNER_AUTH_TOKENS)",
		"limits.max_body_bytes: cannot read abc as an integer (set by PLANNER_LIMITS_MAX_BODY_BYTES)",
		"limits.plan_timeout: must be at least 100ms",
		"listen: must be host:port, for example 127.0.0.1:8080 (port 0 picks a free one) (set by --listen)",
		"probe.allow[1]: must be loopback, host:port, ip:port or cidr:port (port may be *), for example vllm.internal:8000 or 10.20.0.0/16:* (set by PLANNER_PROBE_ALLOW)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
	if strings.Contains(err.Error(), "short-secret") {
		t.Errorf("the token is in the message: %v", err)
	}
}

// TestLoadValueOfTheWrongShape: a section or a list that is a scalar, and
// a duration that is not one (a word, or a number without its unit), are
// each one problem in the file's words, every one of them listed; the
// rules that the missing values then break are not listed besides.
func TestLoadValueOfTheWrongShape(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, "tiers: 5\nlimits: 7\nprobe: {max_duration: soon, lease: 5}\n")
	_, err := Load(serveFlags(t, "--config", file))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	want := []string{
		"limits: must be a mapping, got an integer",
		"probe.lease: must be a duration with its unit, such as 30s or 10m, got the number 5",
		`probe.max_duration: must be a duration with its unit, such as 30s or 10m, got "soon"`,
		"tiers[0]: must be a mapping, got an integer",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
}

func TestLoadNonLoopbackNeedsTokens(t *testing.T) {
	cleanEnv(t)
	_, err := Load(serveFlags(t, "--listen", "0.0.0.0:8080"))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "auth.tokens" {
		t.Fatalf("want one problem at auth.tokens, got %v", err)
	}
	t.Setenv("PLANNER_AUTH_TOKENS", "a-long-enough-token-123")
	if _, err := Load(serveFlags(t, "--listen", "0.0.0.0:8080")); err != nil {
		t.Errorf("with a token: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	cleanEnv(t)
	_, err := Load(serveFlags(t, "--config", filepath.Join(t.TempDir(), "absent.yaml")))
	var ps Problems
	if err == nil || errors.As(err, &ps) || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("want a read error naming the file, got %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080":    true,
		"127.0.0.2:0":       true,
		"[::1]:8080":        true,
		"localhost:8080":    false, // a name: decided on the bound address
		"LocalHost:1":       false,
		"0.0.0.0:8080":      false,
		":8080":             false,
		"[::]:8080":         false,
		"192.168.1.10:8080": false,
		"example.com:80":    false,
		"127.0.0.1":         false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestLoadListenOnName leaves the loopback rule of a name, even
// "localhost", to the address the service binds: the name may resolve
// anywhere. An IP literal is decided here.
func TestLoadListenOnName(t *testing.T) {
	cleanEnv(t)
	for _, listen := range []string{"localhost:8080", "planner.lan:0", "127.0.0.1:0", "[::1]:0"} {
		if _, err := Load(serveFlags(t, "--listen", listen)); err != nil {
			t.Errorf("--listen %s without tokens: %v", listen, err)
		}
	}
	for _, listen := range []string{"0.0.0.0:8080", ":8080", "[::]:0", "192.168.1.10:0"} {
		var ps Problems
		if _, err := Load(serveFlags(t, "--listen", listen)); !errors.As(err, &ps) || ps[0].Path != "auth.tokens" {
			t.Errorf("--listen %s without tokens: %v", listen, err)
		}
	}
}

func TestLoadAllowedHostsAndOrigins(t *testing.T) {
	cleanEnv(t)
	path := writeFile(t, `
allowed_hosts: [" Planner.Example.com ", "planner.example.com:8443", "10.0.0.5", "[fd00::5]:8080", "[fd00::6]", ""]
allowed_origins: ["HTTPS://Tools.Example.com", "https://tools.example.com:443", "http://localhost:3000", "http://x.example:80"]
`)
	cfg, err := Load(serveFlags(t, "--config", path))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"planner.example.com", "planner.example.com:8443", "10.0.0.5", "[fd00::5]:8080", "[fd00::6]"}; !slices.Equal(cfg.AllowedHosts, want) {
		t.Errorf("allowed_hosts %q, want %q", cfg.AllowedHosts, want)
	}
	if want := []string{"https://tools.example.com", "https://tools.example.com", "http://localhost:3000", "http://x.example"}; !slices.Equal(cfg.AllowedOrigins, want) {
		t.Errorf("allowed_origins %q, want %q", cfg.AllowedOrigins, want)
	}

	t.Setenv("PLANNER_ALLOWED_HOSTS", "a.example,b.example:9000")
	t.Setenv("PLANNER_ALLOWED_ORIGINS", "https://a.example")
	cfg, err = Load(serveFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.AllowedHosts, []string{"a.example", "b.example:9000"}) || !slices.Equal(cfg.AllowedOrigins, []string{"https://a.example"}) {
		t.Errorf("from the environment: hosts %q, origins %q", cfg.AllowedHosts, cfg.AllowedOrigins)
	}
}

func TestLoadRefusesBadHostsAndOrigins(t *testing.T) {
	cleanEnv(t)
	path := writeFile(t, `
allowed_hosts: ["http://planner.example.com", "planner.example.com/x", "planner.example.com:0", "host:port", "fd00::5", "-bad-.example", "*.example.com", "ok.example"]
allowed_origins: ["https://tools.example.com/", "tools.example.com", "ftp://tools.example.com", "https://user@tools.example.com", "https://tools.example.com?x", "null", "https://ok.example"]
`)
	_, err := Load(serveFlags(t, "--config", path))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want problems, got %v", err)
	}
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.Path)
	}
	want := []string{
		"allowed_hosts[0]", "allowed_hosts[1]", "allowed_hosts[2]", "allowed_hosts[3]", "allowed_hosts[4]", "allowed_hosts[5]", "allowed_hosts[6]",
		"allowed_origins[0]", "allowed_origins[1]", "allowed_origins[2]", "allowed_origins[3]", "allowed_origins[4]", "allowed_origins[5]",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("problems at %q, want %q:\n%v", paths, want, err)
	}
	if !strings.Contains(err.Error(), "allowed_origins[0]: must be an origin as browsers send it") {
		t.Errorf("the message: %v", err)
	}
}

// TestTierIsAQuota: a tier of the file is read into its scenario.Quota,
// token accounting included, and takes a quota's name, limits and token
// accounting only; the quota's other settings are the scenario's.
func TestTierIsAQuota(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
tiers:
  - {name: big, description: a big key, provider: acme, tpm: 2000000, itpm: 1500000, token_accounting: max_tokens}
`)
	cfg, err := Load(serveFlags(t, "--config", file))
	if err != nil {
		t.Fatal(err)
	}
	want := Tier{Quota: scenario.Quota{Name: "big", TPM: 2_000_000, ITPM: 1_500_000, TokenAccounting: scenario.AccountingMaxTokens}, Description: "a big key", Provider: "acme"}
	if len(cfg.Tiers) != 1 || cfg.Tiers[0] != want {
		t.Fatalf("tiers %+v, want %+v", cfg.Tiers, want)
	}
	file = writeFile(t, `
tiers:
  - {name: a, description: a, rpm: 1, headroom: 0.5, burst_window_s: 2, active_hours: 8, cached_input_free: true}
`)
	_, err = Load(serveFlags(t, "--config", file))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	want2 := []string{"tiers[0].active_hours: unknown setting", "tiers[0].burst_window_s: unknown setting", "tiers[0].cached_input_free: unknown setting", "tiers[0].headroom: unknown setting"}
	if !slices.Equal(got, want2) {
		t.Errorf("problems %q, want %q", got, want2)
	}
}

// TestTierPrice: a tier's price is a quota's, read by its JSON names and
// checked by the scenario's rules for a price: per token or per hour, its
// numbers within their bounds, no other key.
func TestTierPrice(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
tiers:
  - {name: payg, description: a, rpm: 1, price: {currency: EUR, input_per_mtok: 2.5, cached_input_per_mtok: 0.25, output_per_mtok: 10}}
  - {name: hourly, description: b, rpm: 1, price: {per_hour: 12}}
`)
	cfg, err := Load(serveFlags(t, "--config", file))
	if err != nil {
		t.Fatal(err)
	}
	two, quarter, ten, twelve := 2.5, 0.25, 10.0, 12.0
	want := []*scenario.Price{{Currency: "EUR", InputPerMtok: &two, CachedInputPerMtok: &quarter, OutputPerMtok: &ten}, {PerHour: &twelve}}
	for i, w := range want {
		if !reflect.DeepEqual(cfg.Tiers[i].Price, w) {
			t.Errorf("tiers[%d].price %+v, want %+v", i, cfg.Tiers[i].Price, w)
		}
	}
	file = writeFile(t, `
tiers:
  - {name: a, description: a, rpm: 1, price: {input_per_mtok: 2.5}}
  - {name: b, description: b, rpm: 1, price: {per_hour: 1, output_per_mtok: 1}}
  - {name: c, description: c, rpm: 1, price: {per_hour: -1}}
  - {name: d, description: d, rpm: 1, price: {per_minute: 1}}
`)
	_, err = Load(serveFlags(t, "--config", file))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.Path)
	}
	wantPaths := []string{"tiers[0].price.output_per_mtok", "tiers[1].price", "tiers[2].price.per_hour", "tiers[3].price.per_minute"}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("problems at %q, want %q:\n%v", paths, wantPaths, err)
	}
}

// TestLoadTiers: the commands that need only the catalogue read the
// configuration file's tiers, or the built-in ones without a file, and a
// problem with another setting's value does not refuse them; one in the
// tiers does, and so does a key that no setting takes.
func TestLoadTiers(t *testing.T) {
	cleanEnv(t)
	defaults, err := DefaultTiers()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := LoadTiers(nil); err != nil || !reflect.DeepEqual(got, defaults) {
		t.Errorf("without a file: %v, %v", got, err)
	}
	flags := func(file string) *pflag.FlagSet {
		fs := pflag.NewFlagSet("tiers", pflag.ContinueOnError)
		fs.String("config", "", "")
		if err := fs.Parse([]string{"--config", file}); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	got, err := LoadTiers(flags(writeFile(t, "listen: 0.0.0.0:80\ntiers:\n  - {name: mine, description: mine, rpm: 10, price: {per_hour: 2}}\n")))
	if err != nil || len(got) != 1 || got[0].Name != "mine" || *got[0].Price.PerHour != 2 || got[0].TokenAccounting != "actual" {
		t.Errorf("the file's tiers: %+v, %v", got, err)
	}
	_, err = LoadTiers(flags(writeFile(t, "tiers:\n  - {name: mine, description: mine, rpm: -1}\n")))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "tiers[0].rpm" {
		t.Errorf("a bad tier: %v", err)
	}
	// An unknown key is a mistake in the file whatever reads it: tier: for
	// tiers: would otherwise give the built-in catalogue without a word.
	_, err = LoadTiers(flags(writeFile(t, "tier:\n  - {name: mine, description: mine, rpm: 10}\nprobe:\n  max_runing: 3\n")))
	ps = nil
	if !errors.As(err, &ps) || len(ps) != 2 || ps[0].Path != "probe.max_runing" || ps[1].Path != "tier" || ps[1].Message != "unknown setting" {
		t.Errorf("unknown keys: %v", err)
	}
}
