include:
  - tmpl:
      defaults:
        port: 8080
        name: x
      key: wrapped:deep
  - tmpl2:
      defaults:
        name: y
  - tmpl3:
      key: k3
withdefaults: True
