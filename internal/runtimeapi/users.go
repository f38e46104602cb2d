package runtimeapi

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Users are the bot's users (shared with the Chat API's).
type Users struct{ deps }

// UserInput is the body of createUser and getOrCreateUser. properties,
// attributes and integrationName are accepted and not kept.
type UserInput struct {
	Tags               map[string]string `json:"tags"`
	Name               *string           `json:"name"`
	PictureURL         *string           `json:"pictureUrl"`
	IntegrationName    string            `json:"integrationName"`
	DiscriminateByTags []string          `json:"discriminateByTags"`
}

func (in UserInput) user(botID string) (*model.ChatUser, error) {
	if err := model.ValidateTags("tags", in.Tags); err != nil {
		return nil, err
	}
	u := &model.ChatUser{BotID: botID, ID: model.NewID(), Tags: model.CleanTags(in.Tags)}
	if in.Name != nil {
		u.Name = *in.Name
	}
	if in.PictureURL != nil {
		u.PictureURL = *in.PictureURL
	}
	return u, nil
}

// Create creates a user.
func (s *Users) Create(ctx context.Context, c *Caller, in UserInput) (*model.ChatUser, error) {
	if err := c.require("createUser"); err != nil {
		return nil, err
	}
	u, err := in.user(c.BotID)
	if err != nil {
		return nil, err
	}
	if c.Kind != KindIntegration && s.creation != nil && in.IntegrationName != "" {
		id, handled, err := s.creation.CreateUser(ctx, c.BotID, in.IntegrationName, u.Tags)
		if err != nil {
			return nil, err
		}
		if handled {
			got, err := s.store.Chat().GetUser(ctx, c.BotID, id)
			return got, orNotFound(err, "User", id)
		}
	}
	if err := s.store.Chat().CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// Get returns a user.
func (s *Users) Get(ctx context.Context, c *Caller, id string) (*model.ChatUser, error) {
	if err := c.require("getUser"); err != nil {
		return nil, err
	}
	u, err := s.store.Chat().GetUser(ctx, c.BotID, id)
	return u, orNotFound(err, "User", id)
}

// GetOrCreate returns the user whose tags match in.Tags on the keys of
// discriminateByTags (every tag when it is empty), creating it when none
// does. created tells which.
func (s *Users) GetOrCreate(ctx context.Context, c *Caller, in UserInput) (u *model.ChatUser, created bool, err error) {
	if err := c.require("getOrCreateUser"); err != nil {
		return nil, false, err
	}
	nu, err := in.user(c.BotID)
	if err != nil {
		return nil, false, err
	}
	if match := pick(nu.Tags, in.DiscriminateByTags); len(match) > 0 {
		u, err := s.store.Chat().FindUserByTags(ctx, c.BotID, match)
		if err == nil {
			return u, false, nil
		}
		if !model.IsNotFound(err) {
			return nil, false, err
		}
	}
	if err := s.store.Chat().CreateUser(ctx, nu); err != nil {
		return nil, false, err
	}
	return nu, true, nil
}

// UserUpdate is the body of updateUser.
type UserUpdate struct {
	Tags       TagPatch `json:"tags"`
	Name       *string  `json:"name"`
	PictureURL *string  `json:"pictureUrl"`
}

// Update changes a user's tags, name or picture.
func (s *Users) Update(ctx context.Context, c *Caller, id string, in UserUpdate) (*model.ChatUser, error) {
	if err := c.require("updateUser"); err != nil {
		return nil, err
	}
	if err := in.Tags.validate("tags"); err != nil {
		return nil, err
	}
	var u *model.ChatUser
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if u, err = tx.Chat().GetUser(ctx, c.BotID, id); err != nil {
			return orNotFound(err, "User", id)
		}
		u.Tags = in.Tags.apply(u.Tags)
		if in.Name != nil {
			u.Name = *in.Name
		}
		if in.PictureURL != nil {
			u.PictureURL = *in.PictureURL
		}
		u.UpdatedAt = model.Now()
		return tx.Chat().UpdateUser(ctx, u)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Delete deletes a user.
func (s *Users) Delete(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteUser"); err != nil {
		return err
	}
	err := s.store.Chat().DeleteUser(ctx, c.BotID, id)
	s.participantsChanged(c.BotID)
	return orNotFound(err, "User", id)
}

// ListQuery is the query of listUsers.
type ListUsersQuery struct {
	NextToken      string
	PageSize       int
	ConversationID string
	Tags           map[string]string
	SortField      string
	SortDirection  string
}

// List lists users, newest first unless sorted otherwise.
func (s *Users) List(ctx context.Context, c *Caller, q ListUsersQuery) ([]*model.ChatUser, string, error) {
	if err := c.require("listUsers"); err != nil {
		return nil, "", err
	}
	asc, err := ascending(q.SortDirection)
	if err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListUsers(ctx, c.BotID, store.UserFilter{ConversationID: q.ConversationID, Tags: q.Tags,
		SortField: q.SortField, Ascending: asc}, page(q.NextToken, q.PageSize))
}

func ascending(dir string) (bool, error) {
	switch dir {
	case "", "desc":
		return false, nil
	case "asc":
		return true, nil
	}
	return false, model.Errorf(model.ErrInvalidQuery, "sortDirection: must be asc or desc")
}
