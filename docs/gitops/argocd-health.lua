-- Argo CD health check of every platform-operators kind (group ops.platform-operators.io):
-- argocd-cm key resource.customizations.health.ops.platform-operators.io_* (docs/gitops.md).
-- Tested against statuses the controllers compute (controller/*/gitops_test.go).
local hs = { status = "Progressing", message = "Waiting for the controller" }
if obj.status == nil then
  return hs
end
local st = obj.status
if obj.metadata.generation ~= nil and (st.observedGeneration == nil or st.observedGeneration < obj.metadata.generation) then
  hs.message = "Waiting for the controller to observe generation " .. obj.metadata.generation
  return hs
end
local function condition(t)
  if st.conditions ~= nil then
    for _, c in ipairs(st.conditions) do
      if c.type == t then
        return c
      end
    end
  end
  return nil
end
local function say(status, c, fallback)
  hs.status = status
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    hs.message = c.message
  elseif c ~= nil then
    hs.message = c.reason
  else
    hs.message = fallback
  end
  return hs
end

if obj.kind == "At" then
  local c = condition("Succeeded")
  if st.phase == "Succeeded" then
    return say("Healthy", c, "Succeeded")
  elseif st.phase == "Failed" then
    return say("Degraded", c, "Failed")
  elseif c ~= nil and c.reason == "PodsNotCreated" then
    return say("Degraded", c, "Pods not created")
  elseif st.phase == "Running" then
    return say("Progressing", c, "Running")
  elseif st.phase == "Pending" then
    -- Scheduled for later: nothing is wrong while it waits (hours or days).
    return say("Healthy", c, "Waiting")
  end
  return hs
end

local stuck = condition("JobsStuck")
if stuck ~= nil and stuck.status == "True" then
  return say("Degraded", stuck, "Jobs stuck")
end
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  return say("Degraded", stalled, "Stalled")
end
local ready = condition("Ready")
if ready == nil then
  return hs
end
if ready.status == "True" then
  if obj.kind == "ScheduledJob" and (ready.reason == "Suspended" or ready.reason == "StoppedAfterSuccesses") then
    return say("Suspended", ready, "Suspended")
  end
  return say("Healthy", ready, "Ready")
elseif ready.status == "False" and ready.reason == "Progressing" then
  return say("Progressing", ready, "Progressing")
elseif ready.status == "False" then
  return say("Degraded", ready, "Not ready")
end
return say("Progressing", ready, "Reconciling")
