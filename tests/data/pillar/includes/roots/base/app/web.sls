# relative include from a non-init sls resolves against its parent (app.helper)
include:
  - .helper
app:
  web: True
