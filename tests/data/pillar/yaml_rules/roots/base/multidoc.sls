multidoc: 1
---
multidoc2: 2
