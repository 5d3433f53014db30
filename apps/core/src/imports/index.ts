export { IMPORT_COLUMNS, IMPORT_STATUSES, type ImportFormat, type ImportStatusValue } from './parse';
export { IMPORT_BODY_MAX_BYTES, IMPORT_ERRORS_KEPT, getImport, importView, queueImport, receiveImport, requeueImports, requireImportList, type ImportView } from './store';
export { failImport, runImport } from './run';
