
*€x€€€pBhalf