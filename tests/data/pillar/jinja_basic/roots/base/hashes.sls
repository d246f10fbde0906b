hashes:
  random_hash_len: {{ salt['hashutil.sha256_digest']('abc') }}
  b64_module: {{ salt['hashutil.base64_b64encode']('abc') }}
  config_get: {{ salt['config.get']('nosuch_option', 'cfg-default') }}
  config_get_role: {{ salt['config.get']('role', 'cfg-default') }}
  file_roots_opt: {{ opts.get('renderer') }}
