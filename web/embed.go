// Package web holds the built front-end (dist/: the dashboard, the hosted
// chat page and the embed script), embedded in the binary so that go build
// needs no npm. Rebuild it with `npm ci && npm run build` in this directory
// (see docs/webchat.md); internal/web serves it.
package web

import "embed"

// Dist is the content of dist/ (index.html, chat.html, webchat.js,
// favicon.svg, assets/).
//
//go:embed dist
var Dist embed.FS
