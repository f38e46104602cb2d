package integrations

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Definitions are the Admin API's integration operations: publish,
// validate, update, read, list and delete integrations, their logs, the
// rotation of their signing secret, and the self-hosted hub (what is
// published public on this server).
type Definitions struct{ *core }

// Definition is the body of createIntegration and updateIntegration as
// decoded JSON, keyed by wire names.
type Definition map[string]any

// specKeys are the parts of a definition kept as they are (Spec).
var specKeys = []string{"configuration", "configurations", "states", "events", "actions", "entities", "identifier",
	"channels", "user", "interfaces", "extraOperations", "sdkVersion", "attributes", "layers"}

// mapKeys are the spec parts that are maps of named items: updateIntegration
// merges them, a null item removes it.
var mapKeys = []string{"configurations", "states", "events", "actions", "entities", "channels", "interfaces", "extraOperations", "attributes"}

// reservedNames are the built-in integrations' names.
var reservedNames = []string{model.IntegrationChat, model.IntegrationWebchat, "webhook"}

var (
	namePattern    = regexp.MustCompile(`^([a-z0-9][a-z0-9-]{0,49}/)?[a-z0-9][a-z0-9_-]{0,99}$`)
	versionPattern = regexp.MustCompile(`^\d{1,9}\.\d{1,9}\.\d{1,9}(-[0-9A-Za-z.-]+)?$`)
	itemPattern    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,99}$`)
)

// MaxCode is the largest integration bundle accepted (the Admin API's
// body limit bounds it too).
const MaxCode = 45 << 20

// build validates a definition and applies it to d (all of it for a
// creation; update merges).
func (s *Definitions) build(d *model.IntegrationDef, in Definition, update bool) error {
	str := func(key string) (string, bool, error) {
		v, ok := in[key]
		if !ok || v == nil {
			return "", ok, nil
		}
		sv, isStr := v.(string)
		if !isStr {
			return "", true, model.Invalid("%s: must be a string", key)
		}
		return sv, true, nil
	}
	if !update {
		name, _, err := str("name")
		if err != nil {
			return err
		}
		if !namePattern.MatchString(name) {
			return model.Invalid("name: required, lowercase letters, digits, '-' and '_' (optionally prefixed by a workspace handle and '/')")
		}
		if slices.Contains(reservedNames, name) {
			return model.Invalid("name: %q is a built-in integration of Parley", name)
		}
		version, _, err := str("version")
		if err != nil {
			return err
		}
		if !versionPattern.MatchString(version) {
			return model.Invalid("version: required, a semantic version such as 0.1.0")
		}
		d.Name, d.Version = name, version
		if v, ok := in["dev"]; ok && v != nil {
			b, isBool := v.(bool)
			if !isBool {
				return model.Invalid("dev: must be a boolean")
			}
			d.Dev = b
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"title", &d.Title}, {"description", &d.Description}, {"icon", &d.Icon}, {"readme", &d.Readme}, {"code", &d.Code}, {"url", &d.URL}} {
		v, present, err := str(f.key)
		if err != nil {
			return err
		}
		if present {
			*f.dst = v
		}
	}
	if len(d.Code) > MaxCode {
		return model.Errorf(model.ErrPayloadTooLarge, "code: at most %d bytes", MaxCode)
	}
	if d.URL != "" {
		u, err := url.Parse(d.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return model.Invalid("url: must be an http or https URL")
		}
	}
	if d.Code != "" && s.bundles != nil {
		if err := s.bundles.Available(); err != nil {
			return model.Invalid("code: this server cannot run Node.js bundles: %v", err)
		}
	}
	if d.Code != "" && s.bundles == nil {
		return model.Invalid("code: this server does not run Node.js bundles; give a url instead")
	}
	if v, ok := in["public"]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return model.Invalid("public: must be a boolean")
		}
		d.Public = b
		if b {
			d.Visibility = "public"
		} else if d.Visibility == "public" {
			d.Visibility = "private"
		}
	}
	if v, present, err := str("visibility"); err != nil {
		return err
	} else if present && v != "" {
		if !slices.Contains([]string{"public", "private", "unlisted"}, v) {
			return model.Invalid("visibility: must be public, private or unlisted")
		}
		d.Visibility, d.Public = v, v == "public"
	}
	if d.Visibility == "" {
		d.Visibility = "private"
	}
	if v, ok := in["maxExecutionTime"]; ok && v != nil {
		n, isNum := v.(float64)
		if !isNum || n < 1 || n > 60 || n != float64(int(n)) {
			return model.Invalid("maxExecutionTime: must be an integer from 1 to 60")
		}
		d.MaxExecutionTime = int(n)
	}
	if v, ok := in["secrets"]; ok && v != nil {
		m, isMap := v.(map[string]any)
		if !isMap {
			return model.Invalid("secrets: must be an object")
		}
		if d.Secrets == nil {
			d.Secrets = map[string]string{}
		}
		for k, sv := range m {
			switch x := sv.(type) {
			case nil:
				delete(d.Secrets, k)
			case string:
				d.Secrets[k] = x
			default:
				return model.Invalid("secrets.%s: must be a string or null", k)
			}
		}
	}
	if d.Spec == nil {
		d.Spec = map[string]any{}
	}
	for _, k := range specKeys {
		v, ok := in[k]
		if !ok {
			continue
		}
		if update && slices.Contains(mapKeys, k) {
			d.Spec[k] = mergeItems(d.Spec[k], v)
			continue
		}
		if v == nil {
			delete(d.Spec, k)
		} else {
			d.Spec[k] = v
		}
	}
	return checkSpec(d.Spec)
}

// mergeItems merges a map of named items: a null item is removed.
func mergeItems(old, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	out := map[string]any{}
	if om, ok := old.(map[string]any); ok {
		for k, v := range om {
			out[k] = v
		}
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// checkSpec checks the shapes Parley relies on: schemas are objects that
// compile, channels have message types, actions input and output schemas,
// states a known type.
func checkSpec(spec map[string]any) error {
	obj := func(path string, v any) (map[string]any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, model.Invalid("%s: must be an object", path)
		}
		return m, nil
	}
	items := func(key string) (map[string]any, error) {
		v, ok := spec[key]
		if !ok || v == nil {
			return nil, nil
		}
		m, err := obj(key, v)
		if err != nil {
			return nil, err
		}
		for name := range m {
			if !itemPattern.MatchString(name) {
				return nil, model.Invalid("%s.%s: names are letters, digits and '_', starting with a letter", key, name)
			}
		}
		return m, nil
	}
	schemaAt := func(path string, parent map[string]any, required bool) error {
		v, ok := parent["schema"]
		if !ok || v == nil {
			if required {
				return model.Invalid("%s.schema: required", path)
			}
			return nil
		}
		if _, err := obj(path+".schema", v); err != nil {
			return err
		}
		if _, err := compileSchema(v); err != nil {
			return model.Invalid("%s.schema: not a valid JSON schema: %v", path, err)
		}
		return nil
	}
	if v, ok := spec["configuration"]; ok && v != nil {
		m, err := obj("configuration", v)
		if err != nil {
			return err
		}
		if err := schemaAt("configuration", m, false); err != nil {
			return err
		}
	}
	confs, err := items("configurations")
	if err != nil {
		return err
	}
	for name, v := range confs {
		m, err := obj("configurations."+name, v)
		if err != nil {
			return err
		}
		if err := schemaAt("configurations."+name, m, false); err != nil {
			return err
		}
	}
	channels, err := items("channels")
	if err != nil {
		return err
	}
	for name, v := range channels {
		ch, err := obj("channels."+name, v)
		if err != nil {
			return err
		}
		msgs, err := obj("channels."+name+".messages", ch["messages"])
		if err != nil {
			return err
		}
		for typ, mv := range msgs {
			mm, err := obj("channels."+name+".messages."+typ, mv)
			if err != nil {
				return err
			}
			if err := schemaAt("channels."+name+".messages."+typ, mm, true); err != nil {
				return err
			}
		}
	}
	actions, err := items("actions")
	if err != nil {
		return err
	}
	for name, v := range actions {
		a, err := obj("actions."+name, v)
		if err != nil {
			return err
		}
		for _, io := range []string{"input", "output"} {
			m, err := obj("actions."+name+"."+io, a[io])
			if err != nil {
				return err
			}
			if err := schemaAt("actions."+name+"."+io, m, true); err != nil {
				return err
			}
		}
	}
	for _, key := range []string{"events", "entities"} {
		m, err := items(key)
		if err != nil {
			return err
		}
		for name, v := range m {
			e, err := obj(key+"."+name, v)
			if err != nil {
				return err
			}
			if err := schemaAt(key+"."+name, e, true); err != nil {
				return err
			}
		}
	}
	states, err := items("states")
	if err != nil {
		return err
	}
	for name, v := range states {
		st, err := obj("states."+name, v)
		if err != nil {
			return err
		}
		if t, _ := st["type"].(string); !slices.Contains([]string{"conversation", "user", "integration"}, t) {
			return model.Invalid("states.%s.type: must be conversation, user or integration", name)
		}
		if err := schemaAt("states."+name, st, true); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a creation without storing it
// (validateIntegrationCreation).
func (s *Definitions) ValidateCreate(ctx context.Context, m Member, in Definition) error {
	if err := m.require(model.PermWriteBots, "validateIntegrationCreation"); err != nil {
		return err
	}
	_, err := s.prepareCreate(ctx, m, in)
	return err
}

func (s *Definitions) prepareCreate(ctx context.Context, m Member, in Definition) (*model.IntegrationDef, error) {
	now := model.Now()
	d := &model.IntegrationDef{ID: model.NewID(), WorkspaceID: m.WorkspaceID, SigningSecret: model.NewSecret("iss_"),
		CreatedAt: now, UpdatedAt: now}
	if err := s.build(d, in, false); err != nil {
		return nil, err
	}
	if _, err := s.store.Integrations().GetByName(ctx, m.WorkspaceID, d.Name, d.Version); err == nil {
		// Only one of each name and version (development ones apart).
		if existing, _ := s.findExact(ctx, m.WorkspaceID, d.Name, d.Version, d.Dev); existing != nil {
			return nil, model.Errorf(model.ErrAlreadyExists, "integration %s version %s already exists in this workspace", d.Name, d.Version)
		}
	} else if !model.IsNotFound(err) {
		return nil, err
	}
	return d, nil
}

func (s *Definitions) findExact(ctx context.Context, workspaceID, name, version string, dev bool) (*model.IntegrationDef, error) {
	ds, _, err := s.store.Integrations().List(ctx, store.IntegrationFilter{WorkspaceID: workspaceID, Name: name, Version: version,
		Dev: &dev}, store.Page{Size: 1})
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return ds[0], nil
}

// Create publishes an integration in the member's workspace.
func (s *Definitions) Create(ctx context.Context, m Member, in Definition) (*model.IntegrationDef, error) {
	if err := m.require(model.PermWriteBots, "createIntegration"); err != nil {
		return nil, err
	}
	d, err := s.prepareCreate(ctx, m, in)
	if err != nil {
		return nil, err
	}
	if err := s.store.Integrations().Create(ctx, d); err != nil {
		if model.TypeOf(err) == model.ErrAlreadyExists {
			return nil, model.Errorf(model.ErrAlreadyExists, "integration %s version %s already exists in this workspace", d.Name, d.Version)
		}
		return nil, err
	}
	return d, nil
}

// get returns an integration of the member's workspace: another
// workspace's is not found.
func (s *Definitions) get(ctx context.Context, m Member, id string) (*model.IntegrationDef, error) {
	d, err := s.store.Integrations().Get(ctx, id)
	if err != nil {
		return nil, orNotFound(err, "Integration", id)
	}
	if d.WorkspaceID != m.WorkspaceID {
		return nil, notFound("Integration", id)
	}
	return d, nil
}

// Get returns an integration of the member's workspace.
func (s *Definitions) Get(ctx context.Context, m Member, id string) (*model.IntegrationDef, error) {
	return s.get(ctx, m, id)
}

// GetByName returns the workspace's integration by name and version
// ("latest": the newest).
func (s *Definitions) GetByName(ctx context.Context, m Member, name, version string) (*model.IntegrationDef, error) {
	d, err := s.store.Integrations().GetByName(ctx, m.WorkspaceID, name, version)
	return d, orNotFound(err, "Integration", name+"@"+version)
}

// ValidateUpdate checks an update without storing it
// (validateIntegrationUpdate).
func (s *Definitions) ValidateUpdate(ctx context.Context, m Member, id string, in Definition) error {
	if err := m.require(model.PermWriteBots, "validateIntegrationUpdate"); err != nil {
		return err
	}
	d, err := s.get(ctx, m, id)
	if err != nil {
		return err
	}
	return s.build(d, in, true)
}

// Update changes an integration; a change of code or URL restarts its
// process, and the bots that installed it are registered again.
func (s *Definitions) Update(ctx context.Context, m Member, id string, in Definition) (*model.IntegrationDef, error) {
	if err := m.require(model.PermWriteBots, "updateIntegration"); err != nil {
		return nil, err
	}
	d, err := s.get(ctx, m, id)
	if err != nil {
		return nil, err
	}
	oldVersion, oldURL := processVersion(d), d.URL
	if err := s.build(d, in, true); err != nil {
		return nil, err
	}
	d.UpdatedAt = model.Now()
	if err := s.store.Integrations().Update(ctx, d); err != nil {
		return nil, err
	}
	if processVersion(d) != oldVersion || d.URL != oldURL {
		if s.bundles != nil {
			keep := ""
			if d.Code != "" {
				keep = processVersion(d)
			}
			s.bundles.Retire(BundleOwner(d.ID), keep)
		}
	}
	return d, nil
}

// Delete deletes an integration that no bot has installed.
func (s *Definitions) Delete(ctx context.Context, m Member, id string) error {
	if err := m.require(model.PermWriteBots, "deleteIntegration"); err != nil {
		return err
	}
	d, err := s.get(ctx, m, id)
	if err != nil {
		return err
	}
	ins, err := s.store.Integrations().Installations(ctx, d.ID)
	if err != nil {
		return err
	}
	if len(ins) > 0 {
		return model.Invalid("integration %s is installed on %d bot(s); remove it from them first", d.Name, len(ins))
	}
	if err := s.store.Integrations().Delete(ctx, d.ID); err != nil {
		return orNotFound(err, "Integration", id)
	}
	if s.bundles != nil {
		s.bundles.Retire(BundleOwner(d.ID), "")
	}
	return nil
}

// ListQuery is the query of listIntegrations and listPublicIntegrations.
type ListQuery struct {
	NextToken        string
	PageSize         int
	Name             string
	Version          string
	InstalledByBotID string
	Search           string
	Dev              *bool
	Visibility       string
}

// List lists the workspace's integrations, newest first.
func (s *Definitions) List(ctx context.Context, m Member, q ListQuery) ([]*model.IntegrationDef, string, error) {
	f := store.IntegrationFilter{WorkspaceID: m.WorkspaceID, Name: q.Name, Version: q.Version,
		InstalledByBotID: q.InstalledByBotID, Search: q.Search, Dev: q.Dev}
	switch q.Visibility {
	case "":
	case "public":
		f.Public = true
	case "private":
	default:
		return nil, "", model.Errorf(model.ErrInvalidQuery, "visibility: must be public or private")
	}
	ds, next, err := s.store.Integrations().List(ctx, f, store.Page{Token: q.NextToken, Size: q.PageSize})
	if err != nil || q.Visibility != "private" {
		return ds, next, err
	}
	out := ds[:0]
	for _, d := range ds {
		if !d.Public {
			out = append(out, d)
		}
	}
	return out, next, nil
}

// ListPublic lists the integrations published public on this server (the
// self-hosted hub), newest first.
func (s *Definitions) ListPublic(ctx context.Context, q ListQuery) ([]*model.IntegrationDef, string, error) {
	dev := false
	return s.store.Integrations().List(ctx, store.IntegrationFilter{Public: true, Name: q.Name, Version: q.Version,
		InstalledByBotID: q.InstalledByBotID, Search: q.Search, Dev: &dev}, store.Page{Token: q.NextToken, Size: q.PageSize})
}

// GetPublic returns a public integration by name and version ("latest").
func (s *Definitions) GetPublic(ctx context.Context, name, version string) (*model.IntegrationDef, error) {
	d, err := s.store.Integrations().GetByName(ctx, "", name, version)
	return d, orNotFound(err, "Integration", name+"@"+version)
}

// GetPublicByID returns a public integration by id.
func (s *Definitions) GetPublicByID(ctx context.Context, id string) (*model.IntegrationDef, error) {
	d, err := s.store.Integrations().Get(ctx, id)
	if err != nil {
		return nil, orNotFound(err, "Integration", id)
	}
	if !d.Public {
		return nil, notFound("Integration", id)
	}
	return d, nil
}

// LogsQuery is the query of getIntegrationLogs.
type LogsQuery struct {
	TimeStart, TimeEnd string
	Level              string
	UserID             string
	ConversationID     string
	MessageContains    string
	NextToken          string
}

// Logs returns an integration's log lines, newest first.
func (s *Definitions) Logs(ctx context.Context, m Member, id string, q LogsQuery) ([]*model.IntegrationLog, string, error) {
	d, err := s.get(ctx, m, id)
	if err != nil {
		return nil, "", err
	}
	if q.TimeStart == "" {
		return nil, "", model.Errorf(model.ErrInvalidQuery, "timeStart: required")
	}
	f := model.IntegrationLogFilter{IntegrationID: d.ID, Level: q.Level, UserID: q.UserID, ConversationID: q.ConversationID,
		Contains: q.MessageContains}
	if f.Since, err = time.Parse(time.RFC3339Nano, q.TimeStart); err != nil {
		return nil, "", model.Errorf(model.ErrInvalidQuery, "timeStart: must be an ISO 8601 date")
	}
	if q.TimeEnd != "" {
		if f.Until, err = time.Parse(time.RFC3339Nano, q.TimeEnd); err != nil {
			return nil, "", model.Errorf(model.ErrInvalidQuery, "timeEnd: must be an ISO 8601 date")
		}
	}
	return s.store.Integrations().Logs(ctx, f, store.Page{Token: q.NextToken, Size: 100})
}

// RotateSigningSecret gives an integration a new signing secret and
// returns it; the token its processes hold is derived from it, so they
// restart.
func (s *Definitions) RotateSigningSecret(ctx context.Context, m Member, id string) (string, error) {
	if err := m.require(model.PermWriteBots, "rotateIntegrationSigningSecrets"); err != nil {
		return "", err
	}
	d, err := s.get(ctx, m, id)
	if err != nil {
		return "", err
	}
	d.SigningSecret, d.UpdatedAt = model.NewSecret("iss_"), model.Now()
	if err := s.store.Integrations().Update(ctx, d); err != nil {
		return "", err
	}
	if s.bundles != nil {
		s.bundles.Retire(BundleOwner(d.ID), "")
	}
	return d.SigningSecret, nil
}

// SecretNames lists an integration's secret names, sorted.
func SecretNames(d *model.IntegrationDef) []string {
	out := make([]string, 0, len(d.Secrets))
	for k := range d.Secrets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describe names an integration in messages.
func describe(d *model.IntegrationDef) string { return fmt.Sprintf("%s@%s", d.Name, d.Version) }

var _ = strings.TrimSpace
