import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { QueryClientProvider } from '@tanstack/react-query'
import { Router } from 'wouter'
import { useHashLocation } from 'wouter/use-hash-location'
import { queryClient } from './api/queryClient'
import { App } from './App'
import './style.css'

const root = document.getElementById('root')
if (!root) throw new Error('index.html has no #root')

createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <Router hook={useHashLocation}>
        <App />
      </Router>
    </QueryClientProvider>
  </StrictMode>,
)
