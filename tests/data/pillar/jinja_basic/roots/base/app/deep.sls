app_deep:
  sls: {{ sls }}
  slspath: {{ slspath | json }}
  tpldir: {{ tpldir | json }}
  tplfile: {{ tplfile | json }}
  tpldot: {{ tpldot | json }}
  sls_path: {{ sls_path | json }}
  slsdotpath: {{ slsdotpath | json }}
  slscolonpath: {{ slscolonpath | json }}
