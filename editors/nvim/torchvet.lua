-- torchvet's language server in Neovim's built-in LSP client (Neovim 0.7 or later).
--
-- Use: copy this file into your config (e.g. ~/.config/nvim/lua/torchvet.lua) and add
--   require("torchvet").setup()
-- to init.lua. Options: setup({ cmd = { "/path/to/torchvet", "server" }, debounce_ms = 100 }).
local M = {}

local ROOT_MARKERS = { "pyproject.toml", "torchvet.toml", "setup.py", ".git" }

local function root_dir(bufnr)
  local file = vim.api.nvim_buf_get_name(bufnr)
  local dir = vim.fn.fnamemodify(file, ":p:h")
  for _, marker in ipairs(ROOT_MARKERS) do
    local found = vim.fn.findfile(marker, dir .. ";")
    if found == "" then
      found = vim.fn.finddir(marker, dir .. ";")
    end
    if found ~= "" then
      return vim.fn.fnamemodify(found, ":p:h")
    end
  end
  return dir
end

--- Start (or reuse) the torchvet server for Python buffers.
function M.setup(opts)
  opts = opts or {}
  local cmd = opts.cmd or { "torchvet", "server" }
  local clients = {}
  local function attach(bufnr)
    local root = root_dir(bufnr)
    local id = clients[root]
    if id == nil or vim.lsp.get_client_by_id(id) == nil then
      id = vim.lsp.start_client({
        name = "torchvet",
        cmd = cmd,
        root_dir = root,
        init_options = { debounceMs = opts.debounce_ms or 100 },
      })
      clients[root] = id
    end
    if id then
      vim.lsp.buf_attach_client(bufnr, id)
    end
    return id
  end
  vim.api.nvim_create_autocmd("FileType", {
    pattern = "python",
    callback = function(args)
      attach(args.buf)
    end,
  })
  M.attach = attach
  return M
end

return M
