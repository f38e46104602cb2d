import { useState } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { adminClient, roles, type Role } from '../api/client'
import { keys } from '../api/keys'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'

const isRole = (s: string): s is Role => (roles as readonly string[]).includes(s)

type Change = { id: string; role: Role } | { id: string; remove: true }

/** The workspace's members: add by e-mail with a role, change roles, remove. */
export function MembersPage({ ws }: { ws: string }) {
  const qc = useQueryClient()
  const members = useQuery({ queryKey: keys.members(ws), queryFn: () => adminClient(ws).listWorkspaceMembers({}) })
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Role>('developer')
  const reload = () => qc.invalidateQueries({ queryKey: keys.members(ws) })
  const add = useMutation({
    mutationFn: (m: { email: string; role: Role }) => adminClient(ws).createWorkspaceMember(m),
    onSuccess: () => {
      setEmail('')
      return reload()
    },
  })
  const change = useMutation({
    mutationFn: (c: Change) =>
      'remove' in c ? adminClient(ws).deleteWorkspaceMember({ id: c.id }) : adminClient(ws).updateWorkspaceMember({ id: c.id, role: c.role }),
    onSuccess: reload,
  })
  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members</h1>
      <form
        className="inline-form card"
        onSubmit={(e) => {
          e.preventDefault()
          add.mutate({ email: email.trim(), role })
        }}
      >
        <div className="field">
          <label htmlFor="member-email">E-mail</label>
          <input id="member-email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
        </div>
        <div className="field">
          <label htmlFor="member-role">Role</label>
          <select id="member-role" value={role} onChange={(e) => isRole(e.target.value) && setRole(e.target.value)}>
            {roles.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add member'}
        </button>
        {add.error && <ErrorBox error={add.error} />}
      </form>
      <p className="muted small">
        Parley sends no e-mail: give a new member a token with <code>parley token create --email …</code>.
      </p>
      {change.error && <ErrorBox error={change.error} />}
      <QueryState query={members} what="members">
        {(d) => (
          <div className="table-wrap card">
            <table>
              <thead>
                <tr>
                  <th scope="col">Member</th>
                  <th scope="col">Role</th>
                  <th scope="col">Since</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.members.map((m) => (
                  <tr key={m.id}>
                    <td>{m.displayName ? `${m.displayName} (${m.email})` : m.email}</td>
                    <td>
                      <label className="sr-only" htmlFor={'role-' + m.id}>
                        Role of {m.email}
                      </label>
                      <select
                        id={'role-' + m.id}
                        value={m.role}
                        disabled={change.isPending}
                        onChange={(e) => isRole(e.target.value) && change.mutate({ id: m.id, role: e.target.value })}
                      >
                        {roles.map((r) => (
                          <option key={r}>{r}</option>
                        ))}
                      </select>
                    </td>
                    <td className="nowrap">{when(m.createdAt)}</td>
                    <td>
                      <button
                        type="button"
                        className="secondary"
                        disabled={change.isPending}
                        aria-label={`Remove ${m.email}`}
                        onClick={() => change.mutate({ id: m.id, remove: true })}
                      >
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryState>
    </section>
  )
}
