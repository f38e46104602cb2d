// Drives every Files operation of @botpress/client 1.45.0 against Parley,
// with a bot API key, a bot token and members' personal access tokens
// (owner writes, viewer reads). Each operation is asserted on its result,
// then refused with the client's error class for: no credential, another
// bot's credential, unknown ids, oversized bodies, a second upload to a
// used upload URL; after each refusal nothing is stored. Indexing of a
// text, Markdown, HTML and PDF file, and searchFiles with stems shared
// (not words) in English and French.
// Env: API_URL, BOT_ID, OTHER_BOT_ID, BOT_KEY, OTHER_BOT_KEY, BOT_TOKEN,
// OWNER_TOKEN, VIEWER_TOKEN.
import * as bp from '@botpress/client'
import { scenario, rejects, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const botId = env('BOT_ID')
const otherBotId = env('OTHER_BOT_ID')
const mk = (token, id = botId) => new bp.Client({ apiUrl, botId: id, token })
const bot = mk(env('BOT_KEY'))
const viaToken = mk(env('BOT_TOKEN'))
const owner = mk(env('OWNER_TOKEN'))
const viewer = mk(env('VIEWER_TOKEN'))
const otherKey = mk(env('OTHER_BOT_KEY')) // bot B's key, acting on bot A
const otherBot = mk(env('OTHER_BOT_KEY'), otherBotId)
const anon = mk(undefined)
const missing = 'file_does-not-exist'

// A one-page PDF with one line of text per entry of lines.
function pdf(lines) {
  const text = lines.map((l, i) => `BT /F1 12 Tf 72 ${720 - i * 20} Td (${l}) Tj ET`).join('\n')
  const objs = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${text.length} >>\nstream\n${text}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]
  let out = '%PDF-1.4\n'
  const offsets = []
  objs.forEach((o, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n`
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return out
}

async function waitIndexed(client, id) {
  for (let i = 0; i < 100; i++) {
    const { file } = await client.getFile({ id })
    if (file.status !== 'indexing_pending') return file
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`file ${id} still indexing`)
}

async function put(url, body, headers = {}) {
  const res = await fetch(url, { method: 'PUT', body, headers })
  return { status: res.status, body: await res.json().catch(() => null) }
}

// snapshot is everything a refused call could have stored on bot A.
async function snapshot() {
  const files = []
  let nextToken
  do {
    const r = await bot.listFiles({ nextToken })
    files.push(...r.files.map((f) => JSON.stringify({ ...f, url: undefined })))
    nextToken = r.meta.nextToken
  } while (nextToken)
  const kbs = (await bot.listKnowledgeBases({})).knowledgeBases.map((k) => JSON.stringify(k))
  const passages = []
  for (const f of files.map((s) => JSON.parse(s))) {
    passages.push(...(await bot.listFilePassages({ id: f.id })).passages.map((p) => JSON.stringify(p)))
  }
  return JSON.stringify({ files: files.sort(), kbs: kbs.sort(), passages })
}

async function unchanged(what, fn) {
  const before = await snapshot()
  await fn()
  assert.equal(await snapshot(), before, `${what}: something was stored`)
}

const docs = {}

await scenario('upsertFile + upload URL (uploadFile), bot key', async () => {
  const { file } = await bot.upsertFile({ key: 'notes/hello.txt', size: 11, tags: { kb: 'faq', lang: 'en' }, metadata: { source: 'compat' } })
  assert.equal(file.status, 'upload_pending')
  assert.equal(file.botId, botId)
  assert.equal(file.contentType, 'text/plain; charset=utf-8')
  assert.ok(file.uploadUrl.startsWith(apiUrl + '/v1/files/upload/'))
  const up = await put(file.uploadUrl, 'hello world')
  assert.equal(up.status, 200, JSON.stringify(up.body))
  const got = (await bot.getFile({ id: file.id })).file
  assert.equal(got.status, 'upload_completed')
  assert.equal(got.size, 11)
  assert.deepEqual(got.metadata, { source: 'compat' })
  const content = await (await fetch(got.url)).text()
  assert.equal(content, 'hello world')
  docs.hello = got
  // uploadFile: the client's helper (upsert, then PUT to the upload URL).
  const { file: helped } = await viaToken.uploadFile({ key: 'notes/helper.txt', content: 'via helper', tags: { kb: 'misc' } })
  assert.equal(helped.size, 10)
  const up2 = (await viaToken.getFile({ id: helped.id })).file
  assert.equal(up2.status, 'upload_completed')
  assert.equal(up2.size, 10)
  docs.helper = up2
})

await scenario('upsertFile replaces a key: same id, new upload URL, the old one refused', async () => {
  const a = (await bot.upsertFile({ key: 'notes/replace.txt', size: 3 })).file
  const b = (await bot.upsertFile({ key: 'notes/replace.txt', size: 4 })).file
  assert.equal(a.id, b.id)
  assert.notEqual(a.uploadUrl, b.uploadUrl)
  assert.equal((await put(a.uploadUrl, 'abc')).status, 403)
  assert.equal((await put(b.uploadUrl, 'abcd')).status, 200)
  await bot.deleteFile({ id: b.id })
})

await scenario('indexing: text, Markdown, HTML and PDF, with breadcrumbs', async () => {
  const files = {
    'kb/refunds.md': ['text/markdown', '# Store policies\n\n## Refunds\n\nCustomers are refunded within fourteen days of returning an item.\n\n## Shipping\n\nParcels leave the warehouse every Tuesday.\n'],
    'kb/horaires.txt': ['text/plain', "Nos magasins ouvrent à neuf heures.\n\nLes remboursements sont effectués par virement bancaire sous dix jours."],
    'kb/warranty.html': ['text/html', '<html><head><title>x</title><style>p{}</style></head><body><h1>Warranty</h1><p>Every appliance carries a two-year guarantee covering manufacturing defects.</p></body></html>'],
    'kb/manual.pdf': ['application/pdf', pdf(['Battery care', 'Charge the battery fully before the first use.'])],
  }
  for (const [key, [contentType, content]] of Object.entries(files)) {
    const { file } = await bot.uploadFile({ key, content, contentType, index: true, tags: { kb: 'policies' } })
    assert.equal(file.index, true)
    const done = await waitIndexed(bot, file.id)
    assert.equal(done.status, 'indexing_completed', `${key}: ${done.failedStatusReason}`)
    docs[key] = done
  }
  const md = (await bot.listFilePassages({ id: docs['kb/refunds.md'].id })).passages
  assert.deepEqual(md.map((p) => p.meta.subtype), ['title', 'subtitle', 'paragraph', 'subtitle', 'paragraph'])
  assert.match(md[2].content, /refunded within fourteen days/)
  const pdfPassages = (await bot.listFilePassages({ id: docs['kb/manual.pdf'].id })).passages
  assert.ok(pdfPassages.some((p) => /Charge the battery/.test(p.content) && p.meta.pageNumber === 1), JSON.stringify(pdfPassages))
  const html = (await bot.listFilePassages({ id: docs['kb/warranty.html'].id })).passages
  assert.deepEqual(html.map((p) => p.content), ['Warranty', 'Every appliance carries a two-year guarantee covering manufacturing defects.'])
})

await scenario('an unsupported file fails indexing with a reason', async () => {
  const { file } = await bot.uploadFile({ key: 'bin/blob.bin', content: new Uint8Array([1, 2, 3]), contentType: 'application/octet-stream', index: true })
  const done = await waitIndexed(bot, file.id)
  assert.equal(done.status, 'indexing_failed')
  assert.match(done.failedStatusReason, /cannot be indexed/)
  await bot.deleteFile({ id: file.id })
})

await scenario('searchFiles: shared stems, English and French, breadcrumbs, tag filters', async () => {
  let r = await viewer.searchFiles({ query: 'how long do refunds take?', includeBreadcrumb: true })
  assert.ok(r.passages.length > 0)
  assert.match(r.passages[0].content, /refunded within fourteen days/)
  assert.equal(r.passages[0].file.key, 'kb/refunds.md')
  assert.ok(r.passages[0].score > 0)
  assert.deepEqual(r.passages[0].context, [{ text: 'Store policies > Refunds', type: 'breadcrumb' }])
  r = await bot.searchFiles({ query: 'remboursé ?' })
  assert.match(r.passages[0].content, /remboursements sont effectués/)
  r = await bot.searchFiles({ query: 'guaranteed appliances' })
  assert.match(r.passages[0].content, /two-year guarantee/)
  r = await bot.searchFiles({ query: 'charging batteries' })
  assert.match(r.passages[0].content, /Charge the battery/)
  r = await bot.searchFiles({ query: 'refunds', tags: { kb: 'misc' } })
  assert.equal(r.passages.length, 0)
  r = await owner.searchFiles({ query: 'refunds', tags: { kb: 'policies' }, limit: 1 })
  assert.equal(r.passages.length, 1)
  r = await otherBot.searchFiles({ query: 'refunds' })
  assert.equal(r.passages.length, 0, "another bot's search sees nothing of this bot")
})

await scenario('listFiles: tag filters, ids, sorting and pagination', async () => {
  let r = await bot.listFiles({ tags: { kb: 'policies' } })
  assert.equal(r.files.length, 4)
  r = await viewer.listFiles({ tags: { kb: 'faq', lang: 'en' } })
  assert.deepEqual(r.files.map((f) => f.key), ['notes/hello.txt'])
  r = await bot.listFiles({ ids: [docs.hello.id, docs.helper.id], sortField: 'key', sortDirection: 'asc' })
  assert.deepEqual(r.files.map((f) => f.key), ['notes/hello.txt', 'notes/helper.txt'])
  const seen = []
  let nextToken
  do {
    r = await bot.listFiles({ pageSize: 2, nextToken, sortField: 'key', sortDirection: 'asc' })
    assert.ok(r.files.length <= 2)
    seen.push(...r.files.map((f) => f.key))
    nextToken = r.meta.nextToken
  } while (nextToken)
  assert.equal(seen.length, 6)
  assert.deepEqual(seen, [...seen].sort())
  r = await bot.listFiles({ indexed: true })
  assert.equal(r.files.length, 4)
})

await scenario('updateFileMetadata, listFileTags, listFileTagValues', async () => {
  const { file } = await owner.updateFileMetadata({ id: docs.hello.id, metadata: { source: null, reviewed: true }, tags: { lang: null, team: 'support' } })
  assert.deepEqual(file.metadata, { reviewed: true })
  assert.deepEqual(file.tags, { kb: 'faq', team: 'support' })
  const tags = (await viewer.listFileTags({})).tags
  assert.deepEqual(tags, ['kb', 'team'])
  const values = (await viewer.listFileTagValues({ tag: 'kb' })).values
  assert.deepEqual(values, ['faq', 'misc', 'policies'])
})

await scenario('copyFile: content and passages, overwrite, another bot', async () => {
  const src = docs['kb/refunds.md']
  const { file } = await bot.copyFile({ idOrKey: src.key, destinationKey: 'kb/refunds-copy.md' })
  assert.equal(file.key, 'kb/refunds-copy.md')
  assert.equal(file.status, 'indexing_completed')
  assert.equal((await bot.listFilePassages({ id: file.id })).passages.length, 5)
  await rejects(bot.copyFile({ idOrKey: src.id, destinationKey: 'kb/refunds-copy.md' }), bp.AlreadyExistsError, 'copy onto an existing key')
  const again = (await bot.copyFile({ idOrKey: src.id, destinationKey: 'kb/refunds-copy.md', overwrite: true })).file
  assert.notEqual(again.id, file.id)
  await rejects(bot.getFile({ id: file.id }), bp.ResourceNotFoundError, 'overwritten copy')
  await bot.deleteFile({ id: again.id })
  // another bot: the credential must be able to write there.
  await rejects(bot.copyFile({ idOrKey: src.id, destinationKey: 'x.md', 'x-destination-bot-id': otherBotId }), bp.ForbiddenError, "copy into another bot with this bot's key")
  const cross = (await owner.copyFile({ idOrKey: src.id, destinationKey: 'from-a.md', 'x-destination-bot-id': otherBotId })).file
  assert.equal(cross.botId, otherBotId)
  assert.equal((await otherBot.getFile({ id: cross.id })).file.key, 'from-a.md')
  await otherBot.deleteFile({ id: cross.id })
})

await scenario('setFilePassages, listFilePassages pagination', async () => {
  await owner.setFilePassages({ id: docs.hello.id, passages: [
    { content: 'Greetings', type: 'title' },
    { content: 'Say hello to the whole world.', type: 'paragraph' },
    { content: 'Wave goodbye politely.', type: 'paragraph', pageNumber: 2 },
  ] })
  const first = await viewer.listFilePassages({ id: docs.hello.id, pageSize: 2 })
  assert.equal(first.passages.length, 2)
  assert.ok(first.meta.nextToken)
  const second = await viewer.listFilePassages({ id: docs.hello.id, pageSize: 2, nextToken: first.meta.nextToken })
  assert.deepEqual(second.passages.map((p) => [p.content, p.meta.pageNumber]), [['Wave goodbye politely.', 2]])
  const r = await bot.searchFiles({ query: 'waving' })
  assert.equal(r.passages[0].content, 'Wave goodbye politely.')
})

await scenario('knowledge bases: create, update, list, delete', async () => {
  const { knowledgeBase: kb } = await owner.createKnowledgeBase({ name: 'Policies', tags: { kb: 'policies' } })
  assert.equal(kb.name, 'Policies')
  assert.deepEqual(kb.tags, { kb: 'policies' })
  const up = (await bot.updateKnowledgeBase({ id: kb.id, name: 'Store policies', tags: { kb: null, scope: 'store' } })).knowledgeBase
  assert.deepEqual([up.name, up.tags], ['Store policies', { scope: 'store' }])
  const list = (await viewer.listKnowledgeBases({})).knowledgeBases
  assert.equal(list.length, 1)
  assert.equal(list[0].id, kb.id)
  assert.ok(list[0].createdAt)
  assert.equal((await bot.listKnowledgeBases({ tags: { scope: 'other' } })).knowledgeBases.length, 0)
  await bot.deleteKnowledgeBase({ id: kb.id })
  assert.equal((await bot.listKnowledgeBases({})).knowledgeBases.length, 0)
  docs.kb = (await bot.createKnowledgeBase({ name: 'Kept' })).knowledgeBase
})

// Every operation refused: no credential, another bot's key, a viewer
// writing, unknown ids; nothing stored.
const ops = [
  { op: 'upsertFile', write: true, args: () => ({ key: 'refused.txt', size: 3 }) },
  { op: 'getFile', args: () => ({ id: docs.hello.id }), unknown: { id: missing } },
  { op: 'listFiles', args: () => ({}) },
  { op: 'updateFileMetadata', write: true, args: () => ({ id: docs.hello.id, metadata: { x: 1 } }), unknown: { id: missing, metadata: {} } },
  { op: 'deleteFile', write: true, args: () => ({ id: docs.hello.id }), unknown: { id: missing } },
  { op: 'copyFile', write: true, args: () => ({ idOrKey: docs.hello.id, destinationKey: 'refused-copy.txt' }), unknown: { idOrKey: missing, destinationKey: 'x' } },
  { op: 'searchFiles', args: () => ({ query: 'hello' }) },
  { op: 'listFilePassages', args: () => ({ id: docs.hello.id }), unknown: { id: missing } },
  { op: 'setFilePassages', write: true, args: () => ({ id: docs.hello.id, passages: [{ content: 'x' }] }), unknown: { id: missing, passages: [] } },
  { op: 'listFileTags', args: () => ({}) },
  { op: 'listFileTagValues', args: () => ({ tag: 'kb' }) },
  { op: 'createKnowledgeBase', write: true, args: () => ({ name: 'refused' }) },
  { op: 'updateKnowledgeBase', write: true, args: () => ({ id: docs.kb.id, name: 'refused' }), unknown: { id: 'kb_missing', name: 'x' } },
  { op: 'deleteKnowledgeBase', write: true, args: () => ({ id: docs.kb.id }), unknown: { id: 'kb_missing' } },
  { op: 'listKnowledgeBases', args: () => ({}) },
]
for (const o of ops) {
  await scenario(`${o.op}: refused with the client's error classes, nothing stored`, async () => {
    await unchanged(o.op, async () => {
      await rejects(anon[o.op](o.args()), bp.UnauthorizedError, `${o.op} without credential`)
      await rejects(otherKey[o.op](o.args()), bp.ForbiddenError, `${o.op} with another bot's key`)
      if (o.write) await rejects(viewer[o.op](o.args()), bp.ForbiddenError, `${o.op} by a viewer`)
      if (o.unknown) await rejects(bot[o.op](o.unknown), bp.ResourceNotFoundError, `${o.op} with an unknown id`)
    })
  })
}

await scenario("another bot's ids are unknown here", async () => {
  const theirs = (await otherBot.upsertFile({ key: 'theirs.txt', size: 1 })).file
  await unchanged('cross-bot ids', async () => {
    await rejects(bot.getFile({ id: theirs.id }), bp.ResourceNotFoundError, "another bot's file")
    await rejects(bot.deleteFile({ id: theirs.id }), bp.ResourceNotFoundError, "deleting another bot's file")
    await rejects(bot.listFilePassages({ id: theirs.id }), bp.ResourceNotFoundError, "another bot's passages")
  })
  await otherBot.deleteFile({ id: theirs.id })
})

await scenario('oversized bodies: 413 PayloadTooLarge, nothing stored', async () => {
  await unchanged('oversized', async () => {
    await rejects(bot.upsertFile({ key: 'huge.bin', size: 101 * 1024 * 1024 }), bp.PayloadTooLargeError, 'declared size above 100 MB')
    await rejects(bot.setFilePassages({ id: docs.hello.id, passages: [{ content: 'x'.repeat(1100 * 1024) }] }), bp.PayloadTooLargeError, 'JSON body above 1 MB')
  })
  const { file } = await bot.upsertFile({ key: 'small.txt', size: 4 })
  const r = await put(file.uploadUrl, 'more than four bytes')
  assert.equal(r.status, 413)
  assert.equal(r.body.type, 'PayloadTooLarge')
  assert.equal((await bot.getFile({ id: file.id })).file.status, 'upload_pending', 'an oversized upload stores nothing')
  assert.equal((await put(file.uploadUrl, 'four')).status, 200)
  // a second upload to a used URL
  const again = await put(file.uploadUrl, 'five!')
  assert.equal(again.status, 409)
  assert.equal(bp.errorFrom(again.body).constructor, bp.AlreadyExistsError)
  assert.equal(await (await fetch((await bot.getFile({ id: file.id })).file.url)).text(), 'four')
  await bot.deleteFile({ id: file.id })
})

await scenario('deleteFile removes the file, its content and passages', async () => {
  const f = docs['kb/warranty.html']
  const url = (await bot.getFile({ id: f.id })).file.url
  await owner.deleteFile({ id: f.id })
  await rejects(bot.getFile({ id: f.id }), bp.ResourceNotFoundError, 'deleted file')
  assert.equal((await fetch(url)).status, 404)
  const r = await bot.searchFiles({ query: 'guarantee' })
  assert.equal(r.passages.length, 0)
})

finish()
