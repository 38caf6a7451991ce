"""A fleet's recordings: simulated fleets, parallel identification on Dask, a parameter store,
drift alarms and fleet outliers (``motor-ident fleet ...``)."""
