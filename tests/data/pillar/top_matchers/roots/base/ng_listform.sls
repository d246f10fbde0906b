hit:
  ng_listform: True
