! rankmig: checkpoint/restart and live migration of MPI ranks, Fortran interface.
! A bind(C) module over include/rankmig.h; the communicator is an ordinary Fortran
! MPI handle (MPI_Comm_c2f of the C one), valid with `use mpi` or `mpif.h`.
!
!   call MPI_Init(ierr)
!   if (rankmig_init(comm) /= 0) stop 1         ! comm: the job's communicator
!   ierr = rankmig_register_data('grid', c_loc(u), int(8, c_size_t) * size(u, kind=c_size_t))
!   do while (iter < iters)
!     comm = rankmig_comm()                     ! changes at migrations
!     ...
!     if (rankmig_checkpoint() < 0) stop 1      ! may save, or move this rank;
!   end do                                      ! RANKMIG_COMM_CHANGED (1): a new comm
!   ierr = rankmig_finalize()
!   call MPI_Finalize(ierr)
!
! A file the ranks write as they go is written through rankmig, so that a restart
! truncates it to its checkpoint's length and a migration hands it over
! (docs/fortran-and-c.md, "Files your ranks write"):
!
!   ierr = rankmig_open_output('history.txt', out)   ! after rankmig_init, every process
!   write(line, '(a,i0)') 'step ', iter
!   ierr = rankmig_write_line(out, trim(line))
!
! A communicator derived from the job's (MPI_Cart_create, MPI_Comm_split) is rebuilt in
! a callback registered with rankmig_on_comm: a bind(C) subroutine of a module,
! receiving the job's communicator (a Fortran handle, by value) and an argument,
!
!   subroutine rebuild(comm, arg) bind(C)
!     integer(c_int), value :: comm                ! type(MPI_Comm), value with rankmig_f08
!     type(c_ptr), value :: arg
!     if (cart /= MPI_COMM_NULL) call MPI_Comm_free(cart, ierr)
!     call MPI_Cart_create(comm, ...)
!   end subroutine
!   ierr = rankmig_on_comm(rebuild, c_null_ptr)   ! runs it now, then at every change
!
! or when rankmig_checkpoint returns RANKMIG_COMM_CHANGED, or rankmig_generation()
! differs from the value it was built at.
!
! With `use mpi_f08`, use the module rankmig_f08 below instead: the same calls, with
! rankmig_init(comm) and rankmig_comm() giving a type(MPI_Comm).
!
! Installed (scripts/install.sh), the compiled modules are in PREFIX/include and their
! code in PREFIX/lib/librankmig_fortran.a: link with
! `pkg-config --cflags --libs rankmig-fortran`, or the CMake target rankmig::fortran.
! With an MPI without a Fortran wrapper at install time: mpif90 -c include/rankmig.f90
! (gives rankmig.mod and rankmig_f08.mod), then link the program with
! `pkg-config --libs rankmig`.
module rankmig
  use, intrinsic :: iso_c_binding, only: c_int, c_long, c_char, c_ptr, c_size_t, &
       c_null_char, c_null_ptr, c_f_pointer, c_associated, c_funptr, c_funloc
  implicit none
  private
  public :: rankmig_init, rankmig_comm, rankmig_register_data, rankmig_checkpoint, &
       rankmig_resumed, rankmig_finalize, rankmig_last_error, rankmig_generation, &
       rankmig_on_comm, rankmig_comm_callback, rankmig_version, rankmig_open_output, &
       rankmig_write_output, rankmig_write_line, rankmig_close_output

  !> The version of this interface (the header's RANKMIG_VERSION_*); rankmig_version()
  !> gives the library's own.
  integer(c_int), parameter, public :: RANKMIG_VERSION_MAJOR = 1
  integer(c_int), parameter, public :: RANKMIG_VERSION_MINOR = 2
  integer(c_int), parameter, public :: RANKMIG_VERSION_PATCH = 0
  integer(c_int), parameter, public :: RANKMIG_OK = 0
  integer(c_int), parameter, public :: RANKMIG_COMM_CHANGED = 1

  abstract interface
    !> A callback of rankmig_on_comm: the job's communicator (a Fortran handle) and the
    !> argument given with it.
    subroutine rankmig_comm_callback(comm, arg) bind(C)
      import :: c_int, c_ptr
      integer(c_int), value :: comm
      type(c_ptr), value :: arg
    end subroutine rankmig_comm_callback
  end interface

  interface
    integer(c_int) function c_rankmig_on_comm_fortran(callback, arg) &
         bind(C, name="rankmig_on_comm_fortran")
      import :: c_int, c_funptr, c_ptr
      type(c_funptr), value :: callback
      type(c_ptr), value :: arg
    end function c_rankmig_on_comm_fortran
    ! rankmig_init with this module's version: a library that cannot serve it refuses
    ! (RANKMIG_ERR_VERSION, -7), naming both versions in rankmig_last_error().
    integer(c_int) function c_rankmig_init(comm, major, minor) bind(C, name="rankmig_init_v")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), value :: major, minor
    end function c_rankmig_init
    integer(c_int) function c_rankmig_comm_fortran() bind(C, name="rankmig_comm_fortran")
      import :: c_int
    end function c_rankmig_comm_fortran
    integer(c_int) function c_rankmig_register(name, data, bytes) bind(C, name="rankmig_register")
      import :: c_int, c_char, c_ptr, c_size_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), value :: data
      integer(c_size_t), value :: bytes
    end function c_rankmig_register
    integer(c_int) function rankmig_checkpoint() bind(C, name="rankmig_checkpoint")
      import :: c_int
    end function rankmig_checkpoint
    integer(c_long) function rankmig_generation() bind(C, name="rankmig_generation")
      import :: c_long
    end function rankmig_generation
    !> 1 in a process that arrived by migration, and after a restart from a checkpoint
    !> in every process (rankmig_init restored it); 0 at a fresh start. Set-up under
    !> if (rankmig_resumed() == 0) is skipped by an arrival and by every process at a
    !> restart; set-up that must run again at a restart goes outside it.
    integer(c_int) function rankmig_resumed() bind(C, name="rankmig_resumed")
      import :: c_int
    end function rankmig_resumed
    integer(c_int) function rankmig_finalize() bind(C, name="rankmig_finalize")
      import :: c_int
    end function rankmig_finalize
    type(c_ptr) function c_rankmig_last_error() bind(C, name="rankmig_last_error")
      import :: c_ptr
    end function c_rankmig_last_error
    type(c_ptr) function c_rankmig_version() bind(C, name="rankmig_version")
      import :: c_ptr
    end function c_rankmig_version
    integer(c_int) function c_rankmig_open_output(path, handle) bind(C, name="rankmig_open_output")
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int), intent(out) :: handle
    end function c_rankmig_open_output
    integer(c_int) function c_rankmig_write_output(handle, data, bytes) &
         bind(C, name="rankmig_write_output")
      import :: c_int, c_char, c_size_t
      integer(c_int), value :: handle
      character(kind=c_char), dimension(*), intent(in) :: data
      integer(c_size_t), value :: bytes
    end function c_rankmig_write_output
    integer(c_int) function rankmig_close_output(handle) bind(C, name="rankmig_close_output")
      import :: c_int
      integer(c_int), value :: handle
    end function rankmig_close_output
  end interface

contains

  !> Starts the runtime after MPI_Init (collective); comm is set to the job's
  !> communicator, to use instead of MPI_COMM_WORLD. 0 = ok.
  integer(c_int) function rankmig_init(comm)
    integer, intent(out) :: comm
    rankmig_init = c_rankmig_init(c_null_ptr, RANKMIG_VERSION_MAJOR, RANKMIG_VERSION_MINOR)
    comm = int(c_rankmig_comm_fortran())
  end function rankmig_init

  !> The job's communicator now (a Fortran handle): take it again after every
  !> rankmig_checkpoint().
  integer function rankmig_comm()
    rankmig_comm = int(c_rankmig_comm_fortran())
  end function rankmig_comm

  !> Registers bytes bytes at data (c_loc of a target array or scalar) under name; in a
  !> resumed process the saved bytes are copied there now. 0 = ok.
  integer(c_int) function rankmig_register_data(name, data, bytes)
    character(len=*), intent(in) :: name
    type(c_ptr), intent(in) :: data
    integer(c_size_t), intent(in) :: bytes
    rankmig_register_data = c_rankmig_register(trim(name) // c_null_char, data, bytes)
  end function rankmig_register_data

  !> Registers callback, called with the job's communicator and arg: at once, then in
  !> every process each time the job's communicator is replaced (inside
  !> rankmig_checkpoint, before it returns; in a process that arrived by migration, when
  !> it registers). Rebuild derived communicators there. 0 = ok.
  integer(c_int) function rankmig_on_comm(callback, arg)
    procedure(rankmig_comm_callback) :: callback
    type(c_ptr), intent(in) :: arg
    rankmig_on_comm = c_rankmig_on_comm_fortran(c_funloc(callback), arg)
  end function rankmig_on_comm

  !> Opens path as an output file of this rank, written through rankmig with
  !> rankmig_write_line or rankmig_write_output (not with Fortran's write: rankmig
  !> must hold what is written to flush it at each checkpoint and hand it over at a
  !> migration); handle is set to its handle. Call it after rankmig_init, in every
  !> process that writes the file (one that arrived by migration too): a fresh start
  !> creates or truncates it, a restart truncates it to the length its checkpoint
  !> recorded, a process that arrived appends where the rank it replaces stopped.
  !> 0 = ok; else rankmig_last_error() says why (a link, another user's file, a file
  !> shorter than recorded).
  integer(c_int) function rankmig_open_output(path, handle)
    character(len=*), intent(in) :: path
    integer(c_int), intent(out) :: handle
    rankmig_open_output = c_rankmig_open_output(trim(path) // c_null_char, handle)
  end function rankmig_open_output

  !> Writes text (all of it, trailing blanks included) to the output file handle.
  !> 0 = ok.
  integer(c_int) function rankmig_write_output(handle, text)
    integer(c_int), intent(in) :: handle
    character(len=*), intent(in) :: text
    rankmig_write_output = c_rankmig_write_output(handle, text, int(len(text), c_size_t))
  end function rankmig_write_output

  !> Writes text and a newline to the output file handle, e.g. after
  !> write(line, '(a,i0)') 'iteration ', iter: rankmig_write_line(out, trim(line)).
  !> 0 = ok.
  integer(c_int) function rankmig_write_line(handle, text)
    integer(c_int), intent(in) :: handle
    character(len=*), intent(in) :: text
    rankmig_write_line = c_rankmig_write_output(handle, text // achar(10), &
         int(len(text) + 1, c_size_t))
  end function rankmig_write_line

  !> The message of the last failed call.
  function rankmig_last_error() result(message)
    character(len=:), allocatable :: message
    message = fortran_string(c_rankmig_last_error())
  end function rankmig_last_error

  !> The library's version, 'MAJOR.MINOR.PATCH' (the library the program runs with).
  function rankmig_version() result(version)
    character(len=:), allocatable :: version
    version = fortran_string(c_rankmig_version())
  end function rankmig_version

  !> A Fortran copy of a C string of at most 4096 bytes ('' for a null pointer).
  function fortran_string(text) result(string)
    type(c_ptr), intent(in) :: text
    character(len=:), allocatable :: string
    character(kind=c_char), dimension(:), pointer :: chars
    integer :: length
    string = ''
    if (.not. c_associated(text)) return
    call c_f_pointer(text, chars, [4096])
    length = 0
    do while (length < 4096)
      if (chars(length + 1) == c_null_char) exit
      length = length + 1
    end do
    allocate(character(len=length) :: string)
    string = transfer(chars(1:length), string)
  end function fortran_string

end module rankmig

! The same interface for a program that uses mpi_f08: the job's communicator is a
! type(MPI_Comm) (its MPI_VAL is the handle the rankmig module gives).
!
!   use mpi_f08
!   use rankmig_f08
!   type(MPI_Comm) :: comm
!   call MPI_Init()
!   if (rankmig_init(comm) /= 0) stop 1
!   ...
!   comm = rankmig_comm()                       ! changes at migrations
module rankmig_f08
  use, intrinsic :: iso_c_binding, only: c_int, c_ptr, c_funptr, c_funloc
  use mpi_f08, only: MPI_Comm
  use rankmig, only: rankmig_register_data, rankmig_checkpoint, rankmig_resumed, &
       rankmig_finalize, rankmig_last_error, rankmig_generation, RANKMIG_OK, &
       RANKMIG_COMM_CHANGED, rankmig_version, RANKMIG_VERSION_MAJOR, &
       RANKMIG_VERSION_MINOR, RANKMIG_VERSION_PATCH, rankmig_init_handle => rankmig_init, &
       rankmig_comm_handle => rankmig_comm, rankmig_open_output, rankmig_write_output, &
       rankmig_write_line, rankmig_close_output
  implicit none
  private
  public :: rankmig_init, rankmig_comm, rankmig_register_data, rankmig_checkpoint, &
       rankmig_resumed, rankmig_finalize, rankmig_last_error, rankmig_generation, &
       RANKMIG_OK, RANKMIG_COMM_CHANGED, rankmig_on_comm, rankmig_comm_f08_callback, &
       rankmig_version, RANKMIG_VERSION_MAJOR, RANKMIG_VERSION_MINOR, RANKMIG_VERSION_PATCH, &
       rankmig_open_output, rankmig_write_output, rankmig_write_line, rankmig_close_output

  abstract interface
    !> A callback of rankmig_on_comm: the job's communicator and the argument given
    !> with it (type(MPI_Comm) is interoperable: one integer, passed like the handle).
    subroutine rankmig_comm_f08_callback(comm, arg) bind(C)
      import :: MPI_Comm, c_ptr
      type(MPI_Comm), value :: comm
      type(c_ptr), value :: arg
    end subroutine rankmig_comm_f08_callback
  end interface

  interface
    integer(c_int) function c_rankmig_on_comm_fortran(callback, arg) &
         bind(C, name="rankmig_on_comm_fortran")
      import :: c_int, c_funptr, c_ptr
      type(c_funptr), value :: callback
      type(c_ptr), value :: arg
    end function c_rankmig_on_comm_fortran
  end interface

contains

  !> Registers callback, called with the job's communicator and arg: at once, then in
  !> every process each time the job's communicator is replaced. 0 = ok.
  integer(c_int) function rankmig_on_comm(callback, arg)
    procedure(rankmig_comm_f08_callback) :: callback
    type(c_ptr), intent(in) :: arg
    rankmig_on_comm = c_rankmig_on_comm_fortran(c_funloc(callback), arg)
  end function rankmig_on_comm

  !> Starts the runtime after MPI_Init (collective); comm is set to the job's
  !> communicator, to use instead of MPI_COMM_WORLD. 0 = ok.
  integer(c_int) function rankmig_init(comm)
    type(MPI_Comm), intent(out) :: comm
    integer :: handle
    rankmig_init = rankmig_init_handle(handle)
    comm%MPI_VAL = handle
  end function rankmig_init

  !> The job's communicator now: take it again after every rankmig_checkpoint().
  function rankmig_comm() result(comm)
    type(MPI_Comm) :: comm
    comm%MPI_VAL = rankmig_comm_handle()
  end function rankmig_comm

end module rankmig_f08
