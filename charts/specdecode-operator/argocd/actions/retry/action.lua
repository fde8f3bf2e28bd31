-- Argo CD action "retry": asks the operator to retry by setting specdecode.io/action.
-- The operator acts on it once and then removes the annotation.
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["specdecode.io/action"] = "retry"
return obj
