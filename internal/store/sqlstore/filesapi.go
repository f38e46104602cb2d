package sqlstore

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/parley-bots/parley/internal/model"
)

func (r files) ListFiles(ctx context.Context, botID string) ([]*model.File, error) {
	return all(ctx, r.s, "file", scanFile, `SELECT `+fileCols+` FROM files WHERE bot_id = ? ORDER BY created_at DESC, id DESC`, botID)
}

func (r files) FileByKey(ctx context.Context, botID, key string) (*model.File, error) {
	return one(ctx, r.s, "file", scanFile, `SELECT `+fileCols+` FROM files WHERE bot_id = ? AND file_key = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, botID, key)
}

func (r files) FilesToIndex(ctx context.Context, limit int) ([]*model.File, error) {
	return upTo(ctx, r.s, "file", limit, scanFile, `SELECT `+fileCols+` FROM files WHERE status = ? ORDER BY updated_at, id`,
		model.FileIndexingPending)
}

func (r files) sqlite() bool { return r.s.e.d.Name == "sqlite" }

func (r files) SetPassages(ctx context.Context, botID, fileID string, ps []*model.Passage) error {
	return r.s.tx(ctx, func(s *Store) error {
		if _, err := s.exec(ctx, `DELETE FROM file_passages WHERE bot_id = ? AND file_id = ?`, botID, fileID); err != nil {
			return s.fail(err, "passage")
		}
		if r.sqlite() {
			if _, err := s.exec(ctx, `DELETE FROM file_passages_fts WHERE bot_id = ? AND file_id = ?`, botID, fileID); err != nil {
				return s.fail(err, "passage")
			}
		}
		for i, p := range ps {
			p.BotID, p.FileID, p.Position = botID, fileID, i
			if p.ID == "" {
				p.ID = fileID + ":" + strconv.Itoa(i)
			}
			if p.Subtype == "" {
				p.Subtype = "paragraph"
			}
			if _, err := s.exec(ctx, `INSERT INTO file_passages (bot_id, file_id, id, position, content, subtype, page_number, breadcrumb, terms, embedding)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, botID, fileID, p.ID, i, p.Content, p.Subtype, p.PageNumber, p.Breadcrumb, p.Terms,
				encodeVector(p.Embedding)); err != nil {
				return s.fail(err, "file")
			}
			if r.sqlite() {
				if _, err := s.exec(ctx, `INSERT INTO file_passages_fts (terms, bot_id, file_id, position) VALUES (?, ?, ?, ?)`,
					p.Terms, botID, fileID, i); err != nil {
					return s.fail(err, "passage")
				}
			}
		}
		return nil
	})
}

const passageCols = `bot_id, file_id, id, position, content, subtype, page_number, breadcrumb, terms`

func scanPassage(sc scanner) (*model.Passage, error) {
	var p model.Passage
	var vec []byte
	err := sc.Scan(&p.BotID, &p.FileID, &p.ID, &p.Position, &p.Content, &p.Subtype, &p.PageNumber, &p.Breadcrumb, &p.Terms, &vec)
	p.Embedding = decodeVector(vec)
	return &p, err
}

func (r files) ListPassages(ctx context.Context, botID, fileID string, after, limit int) ([]*model.Passage, error) {
	return upTo(ctx, r.s, "passage", limit, scanPassage, `SELECT `+passageCols+`, embedding FROM file_passages
		WHERE bot_id = ? AND file_id = ? AND position > ? ORDER BY position`, botID, fileID, after)
}

func (r files) EmbeddedPassages(ctx context.Context, botID string) ([]*model.Passage, error) {
	return all(ctx, r.s, "passage", scanPassage, `SELECT `+passageCols+`, embedding FROM file_passages
		WHERE bot_id = ? AND embedding IS NOT NULL ORDER BY file_id, position`, botID)
}

// encodeVector stores a vector as little-endian float32s (nil: NULL).
func encodeVector(v []float32) any {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// SearchPassages: terms are words of letters and digits (files.Terms),
// quoted for each engine's query syntax all the same.
func (r files) SearchPassages(ctx context.Context, botID string, terms []string, limit int) ([]*model.Passage, error) {
	var clean []string
	for _, t := range terms {
		t = strings.Map(func(r rune) rune {
			if r == '"' || r == '\'' || r == '\\' {
				return -1
			}
			return r
		}, t)
		if t != "" {
			clean = append(clean, t)
		}
	}
	if len(clean) == 0 {
		return nil, nil
	}
	scan := func(sc scanner) (*model.Passage, error) {
		var p model.Passage
		err := sc.Scan(&p.BotID, &p.FileID, &p.ID, &p.Position, &p.Content, &p.Subtype, &p.PageNumber, &p.Breadcrumb, &p.Terms, &p.Score)
		return &p, err
	}
	if r.sqlite() {
		q := `"` + strings.Join(clean, `" OR "`) + `"`
		// Ranked in the FTS table alone, then joined: only the best
		// limit rows are read from file_passages.
		return all(ctx, r.s, "passage", scan, `SELECT p.bot_id, p.file_id, p.id, p.position, p.content, p.subtype, p.page_number,
			p.breadcrumb, p.terms, f.score
			FROM (SELECT file_id, position, -bm25(file_passages_fts) AS score FROM file_passages_fts
				WHERE file_passages_fts MATCH ? AND bot_id = ?
				ORDER BY bm25(file_passages_fts), file_id, position LIMIT ?) f
			JOIN file_passages p ON p.bot_id = ? AND p.file_id = f.file_id AND p.position = f.position
			ORDER BY f.score DESC, p.file_id, p.position`, q, botID, limit, botID)
	}
	q := `'` + strings.Join(clean, `' | '`) + `'`
	return all(ctx, r.s, "passage", scan, `SELECT `+passageCols+`, ts_rank(tsv, to_tsquery('simple', ?)) AS score
		FROM file_passages WHERE bot_id = ? AND tsv @@ to_tsquery('simple', ?)
		ORDER BY score DESC, file_id, position LIMIT ?`, q, botID, q, limit)
}

const kbCols = `bot_id, id, name, tags, created_at, updated_at`

func scanKB(sc scanner) (*model.KnowledgeBase, error) {
	var kb model.KnowledgeBase
	var tags string
	var c, u int64
	if err := sc.Scan(&kb.BotID, &kb.ID, &kb.Name, &tags, &c, &u); err != nil {
		return nil, err
	}
	if err := fromJSON(tags, &kb.Tags); err != nil {
		return nil, err
	}
	kb.CreatedAt, kb.UpdatedAt = fromMS(c), fromMS(u)
	return &kb, nil
}

func (r files) CreateKnowledgeBase(ctx context.Context, kb *model.KnowledgeBase) error {
	newID(&kb.ID)
	now := model.Now()
	stamp(&kb.CreatedAt, now)
	stamp(&kb.UpdatedAt, now)
	tags, err := jsonText(nonNilMap(kb.Tags))
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO knowledge_bases (`+kbCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		kb.BotID, kb.ID, kb.Name, tags, ms(kb.CreatedAt), ms(kb.UpdatedAt))
	return r.s.fail(err, "knowledge base")
}

func (r files) GetKnowledgeBase(ctx context.Context, botID, id string) (*model.KnowledgeBase, error) {
	return one(ctx, r.s, "knowledge base", scanKB, `SELECT `+kbCols+` FROM knowledge_bases WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r files) UpdateKnowledgeBase(ctx context.Context, kb *model.KnowledgeBase) error {
	stamp(&kb.UpdatedAt, model.Now())
	tags, err := jsonText(nonNilMap(kb.Tags))
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, "knowledge base", `UPDATE knowledge_bases SET name = ?, tags = ?, updated_at = ? WHERE bot_id = ? AND id = ?`,
		kb.Name, tags, ms(kb.UpdatedAt), kb.BotID, kb.ID)
}

func (r files) DeleteKnowledgeBase(ctx context.Context, botID, id string) error {
	return r.s.execOne(ctx, "knowledge base", `DELETE FROM knowledge_bases WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r files) ListKnowledgeBases(ctx context.Context, botID string) ([]*model.KnowledgeBase, error) {
	return all(ctx, r.s, "knowledge base", scanKB, `SELECT `+kbCols+` FROM knowledge_bases WHERE bot_id = ? ORDER BY created_at, id`, botID)
}
