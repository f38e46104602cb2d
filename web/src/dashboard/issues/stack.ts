/** A frame line of a stack as goja writes it: "at name (file:L:C)" or "at file:L:C". */
const frameLine = /^\s*at\s/

/** A frame of the bot's own code, with goja's program counter "(N)" optional. */
const botFrame = /^\s*at (?:(.+) \()?(bot\.js:\d+:\d+)(?:\(\d+\))?\)?$/

/**
 * Splits an issue's description into its message and the frames of the
 * bot's code ("name (bot.js:L:C)" or "bot.js:L:C"), innermost first. The
 * server keeps only those frames; issues recorded before it did may still
 * carry frames of Parley's runtime (prelude.js, native), which are left out
 * here too.
 */
export function splitStack(description: string): { message: string; frames: string[] } {
  const message: string[] = []
  const frames: string[] = []
  for (const line of description.replace(/\n+$/, '').split('\n')) {
    if (!frameLine.test(line)) {
      message.push(line)
      continue
    }
    const m = botFrame.exec(line)
    const loc = m?.[2]
    if (loc) frames.push(m?.[1] ? `${m[1]} (${loc})` : loc)
  }
  return { message: message.join('\n'), frames }
}
