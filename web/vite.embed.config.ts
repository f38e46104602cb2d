import { defineConfig } from 'vite'
import { resolve } from 'node:path'

// The embed script: one classic (IIFE) file, dist/webchat.js, that any site
// loads with <script src=".../webchat.js" data-client-id="...">.
export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    lib: {
      entry: resolve(__dirname, 'src/embed/webchat.ts'),
      name: 'ParleyWebchat',
      formats: ['iife'],
      fileName: () => 'webchat.js',
    },
  },
})
