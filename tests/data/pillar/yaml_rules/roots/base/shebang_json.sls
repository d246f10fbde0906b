#!json
{"shebang_json": {"n": 1, "list": [true, null, "s"], "raw": "{{ grains['id'] }}"}}
