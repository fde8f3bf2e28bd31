-- Argo CD resource actions for SpecDecodeRollout: which ones apply in the current phase.
-- Mirrors the operator's rules: promote in Deploying/Analyzing/Paused, abort while an
-- analysis or promotion runs, retry after RolledBack or Failed.
local actions = {}
local phase = ""
if obj.status ~= nil and obj.status.phase ~= nil then
  phase = obj.status.phase
end

local function one_of(value, list)
  for _, item in ipairs(list) do
    if value == item then
      return true
    end
  end
  return false
end

actions["promote"] = {["disabled"] = not one_of(phase, {"Deploying", "Analyzing", "Paused"})}
actions["abort"] = {["disabled"] = not one_of(phase, {"Deploying", "Analyzing", "Paused", "Promoting"})}
actions["retry"] = {["disabled"] = not one_of(phase, {"RolledBack", "Failed"})}
return actions
