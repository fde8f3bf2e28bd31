-- Argo CD health check for specdecode.io/SpecDecodeRollout (gopher-lua: Lua 5.1 only).
-- Healthy: Promoted with Ready=True for the current generation.
-- Progressing: Pending/Deploying/Analyzing/Promoting, or a status older than the spec.
-- Suspended: Paused (the gates passed; waiting for the promote action).
-- Degraded: RolledBack, Failed or Degraded, with the operator's message.
local hs = {}

local function condition(status, kind)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function message_of(status, fallback)
  if status.message ~= nil and status.message ~= "" then
    return status.message
  end
  return fallback
end

if obj.status == nil or obj.status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report a status"
  return hs
end

local status = obj.status
local phase = status.phase
local generation = obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

if phase == "RolledBack" or phase == "Failed" or phase == "Degraded" then
  hs.status = "Degraded"
  hs.message = phase .. ": " .. message_of(status, "no message")
  return hs
end

if phase == "Paused" then
  hs.status = "Suspended"
  hs.message = message_of(status, "Gates passed; waiting for the promote action")
  return hs
end

if phase == "Promoted" then
  local ready = condition(status, "Ready")
  if ready ~= nil and ready.status == "True" and
      (ready.observedGeneration == nil or generation == nil or ready.observedGeneration == generation) then
    hs.status = "Healthy"
    hs.message = message_of(status, "Promoted")
    return hs
  end
  hs.status = "Progressing"
  if ready ~= nil and ready.message ~= nil and ready.message ~= "" then
    hs.message = "Promoted, not ready yet: " .. ready.message
  else
    hs.message = "Promoted, not ready yet"
  end
  return hs
end

hs.status = "Progressing"
local stage = ""
if status.currentStage ~= nil and status.currentStage ~= "" then
  stage = " (stage " .. status.currentStage .. ")"
end
hs.message = phase .. stage .. ": " .. message_of(status, "in progress")
return hs
