# relative includes from an init.sls resolve against the package (app.db, app.web)
include:
  - .db
  - .web
app:
  init: True
