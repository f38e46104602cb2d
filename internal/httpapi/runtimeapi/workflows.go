package runtimeapi

import (
	"net/http"

	rt "github.com/parley-bots/parley/internal/runtimeapi"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// ---- workflows

func (h workflowsOps) createWorkflow(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.WorkflowInput
	if err := decode(r, &in); err != nil {
		return err
	}
	wf, err := h.api.Workflows.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"workflow": wire.NewWorkflow(wf)})
}

func (h workflowsOps) getOrCreateWorkflow(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.WorkflowInput
	if err := decode(r, &in); err != nil {
		return err
	}
	wf, created, err := h.api.Workflows.GetOrCreate(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"workflow": wire.NewWorkflow(wf), "meta": map[string]bool{"created": created}})
}

func (h workflowsOps) getWorkflow(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	wf, err := h.api.Workflows.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"workflow": wire.NewWorkflow(wf)})
}

func (h workflowsOps) updateWorkflow(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.WorkflowUpdate
	if err := decode(r, &in); err != nil {
		return err
	}
	wf, err := h.api.Workflows.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"workflow": wire.NewWorkflow(wf)})
}

func (h workflowsOps) deleteWorkflow(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Workflows.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h workflowsOps) listWorkflows(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	wfs, next, err := h.api.Workflows.List(r.Context(), c, store.WorkflowFilter{Tags: mapOf(q, "tags"),
		ConversationID: q.Get("conversationId"), UserID: q.Get("userId"), ParentWorkflowID: q.Get("parentWorkflowId"),
		Statuses: listOf(q, "statuses"), Name: q.Get("name")}, token, size)
	if err != nil {
		return err
	}
	out := make([]wire.Workflow, len(wfs))
	for i, wf := range wfs {
		out[i] = wire.NewWorkflow(wf)
	}
	return ok(w, map[string]any{"workflows": out, "meta": meta(next)})
}

// ---- tasks (client 1.35.0)

func (h tasksOps) createTask(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.TaskInput
	if err := decode(r, &in); err != nil {
		return err
	}
	t, err := h.api.Tasks.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"task": wire.NewTask(t)})
}

func (h tasksOps) getTask(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	t, err := h.api.Tasks.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"task": wire.NewTask(t)})
}

func (h tasksOps) updateTask(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.TaskUpdate
	if err := decode(r, &in); err != nil {
		return err
	}
	t, err := h.api.Tasks.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"task": wire.NewTask(t)})
}

func (h tasksOps) deleteTask(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	if err := h.api.Tasks.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h tasksOps) listTasks(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	ts, next, err := h.api.Tasks.List(r.Context(), c, store.TaskFilter{Tags: mapOf(q, "tags"),
		ConversationID: q.Get("conversationId"), UserID: q.Get("userId"), ParentTaskID: q.Get("parentTaskId"),
		Status: listOf(q, "status"), Type: q.Get("type")}, token, size)
	if err != nil {
		return err
	}
	out := make([]wire.Task, len(ts))
	for i, t := range ts {
		out[i] = wire.NewTask(t)
	}
	return ok(w, map[string]any{"tasks": out, "meta": meta(next)})
}

// ---- actions, analytics, tags

func (h actionsOps) callAction(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.ActionInput
	if err := decode(r, &in); err != nil {
		return err
	}
	out, err := h.api.Actions.Call(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"output": out, "meta": map[string]bool{"cached": false}})
}

func (h actionsOps) trackAnalytics(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	var in rt.AnalyticsInput
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := h.api.Actions.Track(r.Context(), c, in); err != nil {
		return err
	}
	return ok(w, empty)
}

func (h actionsOps) listTagValues(w http.ResponseWriter, r *http.Request, c *rt.Caller) error {
	q := r.URL.Query()
	token, size, err := pageOf(q)
	if err != nil {
		return err
	}
	vals, next, err := h.api.Actions.TagValues(r.Context(), c, q.Get("type"), r.PathValue("key"), token, size)
	if err != nil {
		return err
	}
	out := make([]map[string]string, len(vals))
	for i, v := range vals {
		out[i] = map[string]string{"value": v}
	}
	return ok(w, map[string]any{"tags": out, "meta": meta(next)})
}
