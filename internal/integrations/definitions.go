package integrations

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Definitions are the Admin API's integration operations: publish,
// validate, update, read, list and delete integrations, their logs, the
// rotation of their signing secret, and the self-hosted hub (what is
// published public on this server).
type Definitions struct{ *core }

// ValidateCreate checks a creation without storing it
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
	// One of each name and version per workspace (development ones apart).
	existing, err := s.findExact(ctx, m.WorkspaceID, d.Name, d.Version, d.Dev)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		return nil, model.Errorf(model.ErrAlreadyExists, "integration %s version %s already exists in this workspace", d.Name, d.Version)
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
