-- Argo CD action "promote": asks the operator to promote by setting specdecode.io/action.
-- The operator acts on it once and then removes the annotation.
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["specdecode.io/action"] = "promote"
return obj
