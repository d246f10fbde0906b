hit:
  grain_pcre_web: True
