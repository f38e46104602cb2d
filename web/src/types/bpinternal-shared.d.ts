// @botpress/webchat's type declarations import @bpinternal/shared, a
// package that ships TypeScript sources instead of declarations; those
// sources fail this project's strict flags. tsconfig.json's `paths` points
// the import here: the names webchat's declarations use, loosely typed.
// (The runtime code is untouched: Vite resolves the real package.)
export type LatestWebchatConfig = Record<string, unknown>
export type LatestWebchatTheme = Record<string, unknown>
export type EventEmitter<T = Record<string, unknown>> = {
  on<K extends keyof T>(event: K, listener: (payload: T[K]) => void): () => void
  emit<K extends keyof T>(event: K, payload: T[K]): void
}
export declare function createEventEmitter<T = Record<string, unknown>>(): EventEmitter<T>
