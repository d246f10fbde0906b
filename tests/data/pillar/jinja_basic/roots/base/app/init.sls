app:
  init_sls: {{ sls }}
  init_slspath: {{ slspath | json }}
  init_tpldir: {{ tpldir | json }}
  init_tplfile: {{ tplfile | json }}
  init_tpldot: {{ tpldot | json }}
