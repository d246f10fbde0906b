include:
  - tmpl:
      defaults:
        port: 443
        name: role-{{ grains['role'] }}
byrole: True
