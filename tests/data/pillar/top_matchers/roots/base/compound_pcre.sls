hit:
  compound_pcre: True
