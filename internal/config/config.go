// Package config loads and validates the configuration of `planner serve`:
// defaults, then a YAML file, then PLANNER_* environment variables, then
// command-line flags, each overriding the one before. A configuration with
// mistakes is refused with every problem named by its YAML path, so that an
// operator fixes the file in one pass.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"
	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/target"
)

// envName matches an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Defaults of the settings that have one.
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultDB           = "planner.db"
	DefaultMaxBodyBytes = 256 << 10
	// DefaultMaxAnalysisBodyBytes bounds the body of POST /v1/analyses,
	// which carries a whole result file: ordinary files of the tools run
	// to megabytes, a long detailed run to tens of megabytes.
	DefaultMaxAnalysisBodyBytes = 64 << 20
	DefaultPlanTimeout          = 30 * time.Second
	// Simulation caps (section limits): events bound a run's time and
	// memory, simulated time its length.
	DefaultSimulationMaxEvents   = 2_000_000
	DefaultSimulationMaxDuration = 24 * time.Hour
	// Probe caps (section probe).
	DefaultProbeMaxConcurrency = 256
	DefaultProbeMaxRequests    = 20000
	DefaultProbeMaxTokens      = 5_000_000
	DefaultProbeMaxDuration    = 30 * time.Minute
	DefaultProbeMaxRunning     = 2
	DefaultProbeLease          = 30 * time.Second
	// DefaultStoreMaxDocumentBytes caps one stored document (section
	// store): the store's own default.
	DefaultStoreMaxDocumentBytes = store.DefaultMaxDocumentBytes
	// DefaultCredentialHeader carries a named credential's key unless the
	// credential names another header; the key is sent as "Bearer KEY".
	DefaultCredentialHeader = "Authorization"
	// EnvPrefix prefixes the environment variables that set the
	// configuration: PLANNER_LISTEN, PLANNER_DB, PLANNER_AUTH_TOKENS,
	// PLANNER_LIMITS_MAX_BODY_BYTES, PLANNER_ALLOWED_HOSTS,
	// PLANNER_ALLOWED_ORIGINS; PLANNER_CONFIG names the file.
	EnvPrefix = "PLANNER"
)

// Config is the whole server configuration. Each concern has its own
// section struct, so that a new concern (probe settings, say) is a new
// section beside these rather than more fields here.
type Config struct {
	// Listen is the address to serve on, host:port.
	Listen string `mapstructure:"listen" validate:"required,listen"`
	// DB is the store: a SQLite file (the default), or a PostgreSQL
	// database that several services share, named by a postgres:// or
	// postgresql:// URL (docs/deploy.md).
	DB string `mapstructure:"db" validate:"required"`
	// AllowedHosts are names, besides the listen address, its bound
	// address and the loopback forms, that the Host header of a request
	// may give ("host" for any port, or "host:port"): the names of a
	// reverse proxy in front of the service. Any other Host is refused,
	// which defeats DNS rebinding (docs/security.md).
	AllowedHosts []string `mapstructure:"allowed_hosts" validate:"max=100,dive,max=260,allowedhost"`
	// AllowedOrigins are web origins ("scheme://host[:port]"), besides the
	// service's own, whose pages may call the API; a request from any other
	// origin is refused (docs/security.md).
	AllowedOrigins []string `mapstructure:"allowed_origins" validate:"max=100,dive,max=270,origin"`

	Auth   Auth   `mapstructure:"auth"`
	Limits Limits `mapstructure:"limits"`
	Probe  Probe  `mapstructure:"probe"`
	Store  Store  `mapstructure:"store"`
	// Tiers is the quota-tier catalogue; without a tiers key in the file,
	// the built-in catalogue of configs/tiers.yaml.
	Tiers []Tier `mapstructure:"tiers" validate:"max=1000,dive"`
}

// Auth holds the bearer tokens that clients must present. With no tokens
// the API is open, which is allowed only on a loopback address.
type Auth struct {
	Tokens []string `mapstructure:"tokens" validate:"max=100,dive,min=16,max=512,token"`
}

// Limits bounds what one request may ask of the server.
type Limits struct {
	MaxBodyBytes int64 `mapstructure:"max_body_bytes" validate:"min=1024,max=67108864"`
	// MaxAnalysisBodyBytes caps the body of POST /v1/analyses alone, which
	// carries a result file; 0 means DefaultMaxAnalysisBodyBytes.
	MaxAnalysisBodyBytes int64 `mapstructure:"max_analysis_body_bytes" validate:"omitempty,min=1024,max=268435456"`
	// PlanTimeout bounds the time one plan or what-if request may compute.
	PlanTimeout time.Duration `mapstructure:"plan_timeout" validate:"min=100000000,max=600000000000"`
	// MaxComputations caps the plan computations (a plan, or one cell of a
	// what-if grid) running at once across the service; 0 means one per
	// CPU.
	MaxComputations int `mapstructure:"max_computations" validate:"min=0,max=1024"`
	// SimulationMaxEvents caps the events of one simulation, and with them
	// its memory; SimulationMaxDuration its simulated time. Zero means the
	// default.
	SimulationMaxEvents   int           `mapstructure:"simulation_max_events" validate:"omitempty,min=1000,max=100000000"`
	SimulationMaxDuration time.Duration `mapstructure:"simulation_max_duration" validate:"omitempty,min=1000000000,max=604800000000000"`
}

// Store bounds what the store (the file of db) keeps (docs/security.md,
// "The store").
type Store struct {
	// MaxDocumentBytes caps one stored document: a plan with its scenario,
	// name and labels, or a probe's configuration or result. A larger one
	// is refused with a 413 that names the setting. Readiness keeps room
	// for twice this much. Zero means DefaultStoreMaxDocumentBytes.
	MaxDocumentBytes int64 `mapstructure:"max_document_bytes" validate:"omitempty,min=65536,max=67108864"`
	// MaxBytes caps the store file; 0 means no cap but the room on its
	// disk. A write past it is refused as on a full disk (a 507).
	MaxBytes int64 `mapstructure:"max_bytes" validate:"omitempty,min=1048576"`
}

// Probe says where the service's probes may go, which keys they may use,
// and how much one probe (and all of them at once) may spend.
type Probe struct {
	// Allow is the target allow-list (package target): "loopback",
	// host:port with * for a label or the port, ip:port, or cidr:port.
	// Default: loopback only.
	Allow []string `mapstructure:"allow" validate:"max=256"`
	// Credentials are the API keys that a probe request may name.
	Credentials []Credential `mapstructure:"credentials" validate:"max=100,dive"`
	// MaxConcurrency caps each step's concurrency.
	MaxConcurrency int `mapstructure:"max_concurrency" validate:"probe_concurrency"`
	// MaxRequests caps the HTTP requests of one probe, retries included.
	MaxRequests int `mapstructure:"max_requests" validate:"probe_requests"`
	// MaxTokens caps the input plus output tokens of one probe.
	MaxTokens int `mapstructure:"max_tokens" validate:"probe_tokens"`
	// MaxDuration caps the wall time of one probe.
	MaxDuration time.Duration `mapstructure:"max_duration" validate:"probe_duration"`
	// MaxRunning caps the probes (and plan validations) running at once,
	// across every service on the store's database.
	MaxRunning int `mapstructure:"max_running" validate:"min=1,max=64"`
	// Lease is how long a service's hold on a running probe or validation
	// lasts without a renewal (every third of it): on a shared database,
	// another service marks the probes of a service that stopped renewing
	// interrupted once it has passed.
	Lease time.Duration `mapstructure:"lease" validate:"min=1000000000,max=600000000000"`
}

// DefaultProbe is the probe section of a configuration that sets none:
// loopback targets only, no credentials, and the default caps.
func DefaultProbe() Probe {
	return Probe{
		Allow:          []string{target.Loopback},
		Credentials:    []Credential{},
		MaxConcurrency: DefaultProbeMaxConcurrency,
		MaxRequests:    DefaultProbeMaxRequests,
		MaxTokens:      DefaultProbeMaxTokens,
		MaxDuration:    DefaultProbeMaxDuration,
		MaxRunning:     DefaultProbeMaxRunning,
		Lease:          DefaultProbeLease,
	}
}

// Credential is a named API key: the key itself stays in the environment
// variable Env, read when a probe that names the credential starts, and is
// sent in Header.
type Credential struct {
	Name string `mapstructure:"name" validate:"required,max=64,tiername"`
	// Env is the environment variable that holds the key.
	Env string `mapstructure:"env" validate:"required,max=128,envname"`
	// Header is "Authorization" (the default; the key is sent as
	// "Bearer KEY") or "api-key" (Azure OpenAI; the bare key).
	Header string `mapstructure:"header" validate:"oneof=Authorization api-key"`
}

// Problems is every mistake found in a configuration, each at its YAML
// path (for example "tiers[2].rpm").
type Problems []fieldpath.Error

// Error lists every problem, one a line.
func (ps Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%d problem", len(ps))
	if len(ps) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Load builds the configuration from its defaults, the YAML file named by
// the flag "config" or else by PLANNER_CONFIG (none when both are empty),
// the PLANNER_* environment variables, and the flags "listen" and "db" when
// they were set. flags may be nil. The error is Problems when the sources
// were read but the configuration is invalid.
func Load(flags *pflag.FlagSet) (Config, error) {
	v := viper.New()
	v.SetDefault("listen", DefaultListen)
	v.SetDefault("db", DefaultDB)
	v.SetDefault("allowed_hosts", []string{})
	v.SetDefault("allowed_origins", []string{})
	v.SetDefault("auth.tokens", []string{})
	v.SetDefault("limits.max_body_bytes", DefaultMaxBodyBytes)
	v.SetDefault("limits.max_analysis_body_bytes", DefaultMaxAnalysisBodyBytes)
	v.SetDefault("limits.plan_timeout", DefaultPlanTimeout)
	v.SetDefault("limits.max_computations", 0)
	v.SetDefault("limits.simulation_max_events", DefaultSimulationMaxEvents)
	v.SetDefault("limits.simulation_max_duration", DefaultSimulationMaxDuration)
	v.SetDefault("store.max_document_bytes", DefaultStoreMaxDocumentBytes)
	v.SetDefault("store.max_bytes", 0)
	pd := DefaultProbe()
	v.SetDefault("probe.allow", pd.Allow)
	v.SetDefault("probe.credentials", pd.Credentials)
	v.SetDefault("probe.max_concurrency", pd.MaxConcurrency)
	v.SetDefault("probe.max_requests", pd.MaxRequests)
	v.SetDefault("probe.max_tokens", pd.MaxTokens)
	v.SetDefault("probe.max_duration", pd.MaxDuration)
	v.SetDefault("probe.max_running", pd.MaxRunning)
	v.SetDefault("probe.lease", pd.Lease)
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	file := os.Getenv(EnvPrefix + "_CONFIG")
	if flags != nil {
		if f := flags.Lookup("config"); f != nil && f.Changed {
			file = f.Value.String()
		}
		for _, name := range []string{"listen", "db"} {
			if f := flags.Lookup(name); f != nil {
				if err := v.BindPFlag(name, f); err != nil {
					return Config{}, fmt.Errorf("bind flag --%s: %w", name, err)
				}
			}
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("read configuration %s: %w", file, err)
		}
	}

	var cfg Config
	problems := unknownKeys(v.AllSettings(), reflect.TypeFor[Config](), "")
	decodeErr := v.Unmarshal(&cfg, viper.DecoderConfigOption(func(dc *mapstructure.DecoderConfig) {
		dc.MatchName = matchName
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(durationHook, mapstructure.StringToSliceHookFunc(","))
	}))
	decoded := decodeProblems(decodeErr)
	problems = append(problems, decoded...)
	if decodeErr != nil && len(problems) == 0 {
		return Config{}, fmt.Errorf("decode configuration: %w", decodeErr)
	}
	if !v.IsSet("tiers") {
		tiers, err := DefaultTiers()
		if err != nil {
			return Config{}, err
		}
		cfg.Tiers = tiers
	}
	cfg.normalize()
	problems = append(problems, uncovered(problems, notBelow(decoded, cfg.Validate()))...)
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b fieldpath.Error) int { return fieldpath.Compare(a.Path, b.Path) })
		return cfg, sourced(problems, flags)
	}
	return cfg, nil
}

// sourced names, in each problem, the flag or the PLANNER_* environment
// variable that set its value, when one did (they override the file): a
// bad PLANNER_LIMITS_MAX_BODY_BYTES reads "limits.max_body_bytes: cannot
// read abc as an integer (set by PLANNER_LIMITS_MAX_BODY_BYTES)", not as a
// mistake in a file that may not exist. The value is not repeated: it may
// be a token.
func sourced(ps Problems, flags *pflag.FlagSet) Problems {
	for i, p := range ps {
		key, _, _ := strings.Cut(p.Path, "[")
		if key == "" {
			continue
		}
		if flags != nil && (key == "listen" || key == "db") {
			if f := flags.Lookup(key); f != nil && f.Changed {
				ps[i].Message += " (set by --" + key + ")"
				continue
			}
		}
		if env := EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_")); os.Getenv(env) != "" {
			ps[i].Message += " (set by " + env + ")"
		}
	}
	return ps
}

// normalize trims what environment variables and files commonly pad.
func (c *Config) normalize() {
	tokens := c.Auth.Tokens[:0]
	for _, t := range c.Auth.Tokens {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	c.Auth.Tokens = tokens
	c.AllowedHosts = trimmedLower(c.AllowedHosts)
	c.AllowedOrigins = trimmedLower(c.AllowedOrigins)
	for i, o := range c.AllowedOrigins {
		// Browsers leave the scheme's default port out of an Origin.
		if h, ok := strings.CutSuffix(o, ":443"); ok && strings.HasPrefix(o, "https://") {
			c.AllowedOrigins[i] = h
		} else if h, ok := strings.CutSuffix(o, ":80"); ok && strings.HasPrefix(o, "http://") {
			c.AllowedOrigins[i] = h
		}
	}
	for i := range c.Tiers {
		if c.Tiers[i].TokenAccounting == "" {
			c.Tiers[i].TokenAccounting = scenario.DefaultTokenAccounting
		}
	}
	allow := c.Probe.Allow[:0]
	for _, a := range c.Probe.Allow {
		if a = strings.TrimSpace(a); a != "" {
			allow = append(allow, a)
		}
	}
	c.Probe.Allow = allow
	for i := range c.Probe.Credentials {
		cr := &c.Probe.Credentials[i]
		switch {
		case cr.Header == "", strings.EqualFold(cr.Header, DefaultCredentialHeader):
			cr.Header = DefaultCredentialHeader
		case strings.EqualFold(cr.Header, "api-key"):
			cr.Header = "api-key"
		}
	}
}

// trimmedLower trims and lower-cases every entry and drops the empty ones:
// host names and origins compare without regard to case.
func trimmedLower(list []string) []string {
	out := list[:0]
	for _, v := range list {
		if v = strings.ToLower(strings.TrimSpace(v)); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Validate returns every problem in the configuration: the field rules of
// the struct tags and the rules that span fields (unique tier names, a limit
// on every tier, a tier's price in one of its forms, tokens on a
// non-loopback address).
func (c Config) Validate() Problems {
	var fields, ps Problems
	var verrs validator.ValidationErrors
	if err := validate.Struct(c); errors.As(err, &verrs) {
		for _, fe := range verrs {
			fields = append(fields, fieldpath.Error{Path: yamlPath(fe.Namespace()), Message: message(fe)})
		}
	} else if err != nil {
		fields = append(fields, fieldpath.Error{Message: err.Error()})
	}
	seen := map[string]int{}
	for i, t := range c.Tiers {
		p := fmt.Sprintf("tiers[%d]", i)
		if j, dup := seen[t.Name]; dup && t.Name != "" {
			ps = append(ps, fieldpath.Error{Path: p + ".name", Message: fmt.Sprintf("duplicate tier name %q (also tiers[%d])", t.Name, j)})
		} else {
			seen[t.Name] = i
		}
		if !t.HasLimit() {
			ps = append(ps, fieldpath.Error{Path: p, Message: scenario.NoLimit})
		}
		if t.Price != nil {
			ps = append(ps, scenario.CheckPrice(p+".price", *t.Price)...)
		}
	}
	for i, entry := range c.Probe.Allow {
		if _, err := target.ParseRule(entry); err != nil {
			ps = append(ps, fieldpath.Error{Path: fmt.Sprintf("probe.allow[%d]", i), Message: err.Error()})
		}
	}
	names := map[string]int{}
	for i, cr := range c.Probe.Credentials {
		if j, dup := names[cr.Name]; dup && cr.Name != "" {
			ps = append(ps, fieldpath.Error{Path: fmt.Sprintf("probe.credentials[%d].name", i), Message: fmt.Sprintf("duplicate credential name %q (also probe.credentials[%d])", cr.Name, j)})
		} else {
			names[cr.Name] = i
		}
	}
	if doc := cmp.Or(c.Store.MaxDocumentBytes, DefaultStoreMaxDocumentBytes); c.Store.MaxBytes > 0 && c.Store.MaxBytes < 4*doc {
		ps = append(ps, fieldpath.Error{Path: "store.max_bytes", Message: fmt.Sprintf(
			"at least 4 × store.max_document_bytes (%d): the store keeps room for twice the largest document besides what it holds", 4*doc)})
	}
	if c.Store.MaxBytes > 0 && store.IsPostgres(c.DB) {
		ps = append(ps, fieldpath.Error{Path: "store.max_bytes", Message: "applies to a SQLite file; a PostgreSQL database (db) is bounded by its server"})
	}
	if len(c.Auth.Tokens) == 0 && c.Listen != "" && !IsLoopback(c.Listen) && !listensOnName(c.Listen) {
		ps = append(ps, fieldpath.Error{Path: "auth.tokens", Message: fmt.Sprintf("required: listen address %s is not a loopback address, so the API must ask for a bearer token", c.Listen)})
	}
	return append(fields, uncovered(fields, ps)...)
}

// notBelow drops the problems under a value that could not be decoded
// (a section that is a number): they are about the defaults left in its
// place, not about anything the file says.
func notBelow(decoded, more Problems) Problems {
	var out Problems
	for _, p := range more {
		if !slices.ContainsFunc(decoded, func(d fieldpath.Error) bool {
			return strings.HasPrefix(p.Path, d.Path+".") || strings.HasPrefix(p.Path, d.Path+"[")
		}) {
			out = append(out, p)
		}
	}
	return out
}

// durationHook decodes a duration from its text ("30s", "10m", as
// time.ParseDuration reads it), and refuses a number other than 0, which
// would otherwise be read as nanoseconds (plan_timeout: 30 is 30ns, not
// 30 s). Values that are durations already (the defaults) pass.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() || from == to {
		return data, nil
	}
	const want = "must be a duration with its unit, such as 30s or 10m"
	switch from.Kind() {
	case reflect.String:
		d, err := time.ParseDuration(strings.TrimSpace(data.(string)))
		if err != nil {
			return nil, fmt.Errorf("%s, got %q", want, data)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return data, nil
		}
		return nil, fmt.Errorf("%s, got the number %v", want, data)
	}
	return data, nil
}

// uncovered drops the problems at a path where, or under which, have
// already has one: a bad value is reported once, not again through the
// rules it then breaks.
func uncovered(have, more Problems) Problems {
	var out Problems
	for _, p := range more {
		covered := slices.ContainsFunc(have, func(h fieldpath.Error) bool {
			return h.Path == p.Path || strings.HasPrefix(h.Path, p.Path+".") || strings.HasPrefix(h.Path, p.Path+"[")
		})
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// matchName matches a key of the file to a field: by its mapstructure
// tag, or by its Go name, in any letter case and, for a Go name, without
// the underscores of the key (the scenario.Quota of a tier, whose JSON
// names are token_accounting for TokenAccounting, has no mapstructure
// tags).
func matchName(key, field string) bool {
	if strings.EqualFold(key, field) {
		return true
	}
	return !strings.Contains(field, "_") && strings.EqualFold(strings.ReplaceAll(key, "_", ""), field)
}

// unknownSetting is the problem of a key that no setting takes.
const unknownSetting = "unknown setting"

// unknownKeys lists the keys of settings that no field of t (a struct with
// mapstructure tags) takes, by path, at every depth. A tier's quota takes
// the keys TierQuotaKeys.
func unknownKeys(settings map[string]any, t reflect.Type, path string) Problems {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "" && opts == "" {
			// A scenario type (a tier's price) has JSON names only.
			name, _, _ = strings.Cut(f.Tag.Get("json"), ",")
		}
		if opts == "squash" && f.Type == reflect.TypeFor[scenario.Quota]() {
			quota := structFieldsByJSON(f.Type)
			for _, k := range TierQuotaKeys {
				fields[k] = quota[k]
			}
			continue
		}
		fields[name] = f.Type
	}
	var ps Problems
	for key, value := range settings {
		p := key
		if path != "" {
			p = path + "." + key
		}
		ft, ok := fields[key]
		if !ok {
			ps = append(ps, fieldpath.Error{Path: p, Message: unknownSetting})
			continue
		}
		ps = append(ps, unknownIn(value, ft, p)...)
	}
	return ps
}

// structFieldsByJSON is the type of each field of t, by its JSON name.
func structFieldsByJSON(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f.Type
	}
	return fields
}

// unknownIn applies unknownKeys to a value that should decode into t.
func unknownIn(value any, t reflect.Type, path string) Problems {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct:
		if m, ok := value.(map[string]any); ok {
			return unknownKeys(m, t, path)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if items, ok := value.([]any); ok {
			var ps Problems
			for i, item := range items {
				ps = append(ps, unknownIn(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
			}
			return ps
		}
	}
	return nil
}

// IsLoopback reports whether a listen address (host:port) is a loopback
// IP, which accepts connections from this machine only. A name, even
// "localhost", is not: it may resolve to any address, so for a name the
// service decides on the address it has bound (planner serve). An empty
// host listens on every interface and is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// listensOnName reports whether a listen address names its host, whose
// addresses are known only once it is bound.
func listensOnName(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	_, err = netip.ParseAddr(host)
	return err != nil
}

// ValidAllowedHost reports whether an allowed_hosts entry is a host name
// or IP, with or without a port: "planner.example.com",
// "planner.example.com:443", "10.0.0.5", "[fd00::5]:8080".
func ValidAllowedHost(entry string) bool {
	host := entry
	if h, port, err := net.SplitHostPort(entry); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return false
		}
		host = h
	} else if strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]") {
		ip, err := netip.ParseAddr(entry[1 : len(entry)-1])
		return err == nil && ip.Is6()
	} else if strings.Contains(entry, ":") {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return hostName.MatchString(host)
}

// hostName matches a DNS name: dot-separated labels of letters, digits
// and hyphens, not starting or ending with a hyphen, with an optional
// final dot.
var hostName = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.?$`)

// ValidOrigin reports whether an allowed_origins entry is a web origin as
// browsers send it in the Origin header: http or https, a host, an
// optional port, and nothing else ("https://tools.example.com").
func ValidOrigin(entry string) bool {
	u, err := url.Parse(entry)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(entry, "?") || strings.HasSuffix(entry, "#") {
		return false
	}
	if strings.HasSuffix(u.Host, ":") {
		return false
	}
	return ValidAllowedHost(u.Host)
}

// validate checks the struct tags; it names fields by their YAML keys.
var validate = func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		return name
	})
	must(v.RegisterValidation("listen", func(fl validator.FieldLevel) bool {
		_, port, err := net.SplitHostPort(fl.Field().String())
		if err != nil {
			return false
		}
		n, err := strconv.Atoi(port)
		return err == nil && n >= 0 && n <= 65535
	}))
	must(v.RegisterValidation("token", func(fl validator.FieldLevel) bool {
		return !strings.ContainsFunc(fl.Field().String(), func(r rune) bool { return r <= ' ' || r > '~' })
	}))
	must(v.RegisterValidation("tiername", func(fl validator.FieldLevel) bool {
		return tierName.MatchString(fl.Field().String())
	}))
	must(v.RegisterValidation("envname", func(fl validator.FieldLevel) bool {
		return envName.MatchString(fl.Field().String())
	}))
	must(v.RegisterValidation("allowedhost", func(fl validator.FieldLevel) bool {
		return ValidAllowedHost(fl.Field().String())
	}))
	must(v.RegisterValidation("origin", func(fl validator.FieldLevel) bool {
		return ValidOrigin(fl.Field().String())
	}))
	// Bounds declared elsewhere, once: a tier's quota has a quota's
	// (scenario.Bounds, read from the struct tags of scenario.Quota), the
	// probe caps lie within the bounds of any probe (package probe).
	b := scenario.Bounds()
	v.RegisterAlias("quotaname", fmt.Sprintf("max=%d,tiername", b.NameMaxLength))
	for name, most := range b.LimitMax {
		v.RegisterAlias("limit_"+name, "gte=0,lte="+strconv.FormatFloat(most, 'g', -1, 64))
	}
	v.RegisterAlias("accounting", "oneof="+scenario.AccountingActual+" "+scenario.AccountingMaxTokens)
	v.RegisterStructValidation(tierQuota, Tier{})
	v.RegisterAlias("probe_concurrency", fmt.Sprintf("min=1,max=%d", probe.MaxConcurrency))
	v.RegisterAlias("probe_requests", fmt.Sprintf("min=1,max=%d", probe.MaxBudgetRequests))
	v.RegisterAlias("probe_tokens", fmt.Sprintf("min=1,max=%d", probe.MaxBudgetTokens))
	v.RegisterAlias("probe_duration", fmt.Sprintf("min=%d,max=%d", time.Second, probe.MaxBudgetDuration))
	return v
}()

// tierQuota checks the quota of a tier, whose fields (scenario.Quota's)
// carry no validation tags: its name, each limit and its token accounting,
// by the rules quotaname, limit_rpm, ... and accounting, each problem
// reported at the field's key as if the tag were on the field.
func tierQuota(sl validator.StructLevel) {
	t := sl.Current().Interface().(Tier)
	check := func(value any, key, rules string) {
		var verrs validator.ValidationErrors
		if errors.As(sl.Validator().Var(value, rules), &verrs) {
			sl.ReportError(value, key, key, verrs[0].ActualTag(), verrs[0].Param())
		}
	}
	check(t.Name, "name", "required,quotaname")
	for d := range scenario.NumDimensions {
		check(t.Limit(d), d.String(), "limit_"+d.String())
	}
	check(t.TokenAccounting, "token_accounting", "accounting")
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// yamlPath turns a validator namespace ("Config.tiers[2].rpm") into the
// YAML path of the field ("tiers[2].rpm").
func yamlPath(ns string) string {
	_, rest, found := strings.Cut(ns, ".")
	if !found {
		return ns
	}
	return rest
}

// message words a failed struct tag rule (the rule itself when the tag is
// an alias such as limit_rpm).
func message(fe validator.FieldError) string {
	numeric := false
	switch fe.Kind() {
	case reflect.Int, reflect.Int64, reflect.Float64, reflect.Float32, reflect.Int32:
		numeric = true
	}
	if fe.Type() == reflect.TypeFor[time.Duration]() {
		if n, err := strconv.ParseInt(fe.Param(), 10, 64); err == nil {
			switch fe.ActualTag() {
			case "min":
				return "must be at least " + time.Duration(n).String()
			case "max":
				return "must be at most " + time.Duration(n).String()
			}
		}
	}
	switch fe.ActualTag() {
	case "required":
		return "required"
	case "gte":
		return "must be >= " + fe.Param()
	case "lte":
		return "must be <= " + fe.Param()
	case "min":
		if numeric {
			return "must be >= " + fe.Param()
		}
		if fe.Kind() == reflect.Slice {
			return "must have at least " + fe.Param() + " entries"
		}
		return "must be at least " + fe.Param() + " characters long"
	case "max":
		if numeric {
			return "must be <= " + fe.Param()
		}
		if fe.Kind() == reflect.Slice {
			return "must have at most " + fe.Param() + " entries"
		}
		return "must be at most " + fe.Param() + " characters long"
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(fe.Param(), " ", ", ")
	case "listen":
		return "must be host:port, for example 127.0.0.1:8080 (port 0 picks a free one)"
	case "tiername":
		return "must start with a letter or digit and hold only letters, digits, '.', '_' and '-'"
	case "token":
		return "must be printable ASCII without spaces"
	case "envname":
		return "must be an environment variable name: letters, digits and '_', not starting with a digit"
	case "allowedhost":
		return "must be a host name or IP, with an optional port: planner.example.com, planner.example.com:443, [fd00::5]:8080"
	case "origin":
		return "must be an origin as browsers send it: http or https, a host and an optional port, without a path (https://tools.example.com)"
	}
	return "fails the rule " + fe.Tag()
}

// decodeProblems lists the values that could not be converted to their
// field's type, by path.
func decodeProblems(err error) Problems {
	var ps Problems
	var walk func(error)
	walk = func(err error) {
		// Every DecodeError of the tree, not only the first that errors.As
		// would find under a wrapping error.
		if de, ok := err.(*mapstructure.DecodeError); ok {
			ps = append(ps, fieldpath.Error{Path: de.Name(), Message: typeMessage(de.Unwrap())})
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if u := errors.Unwrap(err); u != nil {
			walk(u)
		}
	}
	if err != nil {
		walk(err)
	}
	return ps
}

func typeMessage(err error) string {
	if kind, ok := strings.CutPrefix(err.Error(), "expected a map or struct, got "); ok {
		return "must be a mapping, got " + kindWord(strings.Trim(kind, `"`))
	}
	var pe *mapstructure.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("cannot read %v as %s", pe.Value, kindName(pe.Expected.Kind()))
	}
	var ue *mapstructure.UnconvertibleTypeError
	if errors.As(err, &ue) {
		return fmt.Sprintf("must be %s, got %s", kindName(ue.Expected.Kind()), describe(ue.Value))
	}
	return err.Error()
}

// kindWord words a reflect.Kind's name ("int", as mapstructure quotes it).
func kindWord(name string) string {
	for k := reflect.Bool; k <= reflect.UnsafePointer; k++ {
		if k.String() == name {
			return kindName(k)
		}
	}
	return name
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Bool:
		return "true or false"
	}
	return k.String()
}

func describe(v any) string {
	if v == nil {
		return "nothing"
	}
	return kindName(reflect.TypeOf(v).Kind())
}
