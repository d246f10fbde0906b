hit:
  pcre_db: True
